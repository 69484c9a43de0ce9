"""Known answers of the viewer's small helpers (once the examples of their docstrings)."""

import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval._widgets.colours import shade, tint
from napari_segeval._widgets.compare.view import pane_title
from napari_segeval._widgets.demo import check_attack_settings
from napari_segeval._widgets.display import DisplayPreset, percentile_limits, presets_for
from napari_segeval._widgets.jobs.tasks import capability, dense_ref, keeps_frames
from napari_segeval._widgets.jobs.worker import error_message
from napari_segeval._widgets.models.rows import Row, catalogue_rows, row_state
from napari_segeval._widgets.overlays.arrays import dice_colour, slice_extent, slice_kinds, union
from napari_segeval._widgets.prompt.run import PropagationJobs, estimate_text
from napari_segeval._widgets.results.correct import protocol_prompts, run_model
from napari_segeval._widgets.results.layers import prediction_role
from napari_segeval._widgets.results.review import flagged_text
from napari_segeval._widgets.results.rounds import prompt_layer_data
from napari_segeval._widgets.results.tasks import focus_of
from napari_segeval.evaluation.keys import PredictionKey as K
from napari_segeval.evaluation.protocols import get_protocol
from napari_segeval.prompts import Box, Point, PromptSet
from napari_segeval.uncertainty.risk import Flag, SliceRisk


def test_colours():
    assert shade("#ff8040", 0.5) == "#7f4020"
    assert tint("#ff8040", 0.5) == "#ffbf9f"


def test_pane_title():
    assert pane_title("clean", None, False) == "image + clean prediction"
    named = NS(metadata={"prediction": K("clean", model="threshold")})
    assert pane_title("attacked", named, False) == "image + clean @ threshold"
    assert (
        pane_title("attacked", NS(metadata={}), False)
        == "image + attacked prediction (no attacked image)"
    )


def test_check_attack_settings():
    check_attack_settings(0.02, 5)
    with pytest.raises(SegEvalError) as raised:
        check_attack_settings(-1, 5)
    assert str(raised.value) == "--eps must be in [0, 1] (normalized units), got -1"


def test_display_presets():
    image = np.zeros((4, 10))
    image[1] = np.arange(1, 11)
    assert percentile_limits(image, 10, 90) == pytest.approx((1.9, 9.1))
    assert [p.name for p in presets_for("MR")] == ["0.5-99.5 %", "1-99 %", "2-98 %", "full range"]
    preset = DisplayPreset("p", percentiles=(0.0, 100.0))
    assert preset.limits(np.array([0, 5, 10, 20])) == (5.0, 20.0)


def test_jobs_tasks():
    assert capability(("builtin", None, "cpu")).points is None
    assert capability(("MedSAM2_CTLesion", None, "cpu")).points is True  # a catalogue name
    assert keeps_frames(("litemedsam", None, "cpu")) is True
    assert keeps_frames(("threshold", None, "cpu")) is False
    with pytest.raises(ValueError, match="^TorchScript file: choose a file first$"):
        dense_ref("TorchScript file", "")


def test_error_message():
    assert error_message(ReadError("ct.nii: not a NIfTI file")) == "ct.nii: not a NIfTI file"
    assert error_message(ValueError("bad")) == "ValueError: bad"


def test_model_rows():
    rows = catalogue_rows()
    assert [r.name for r in rows][:3] == ["builtin", "threshold", "litemedsam"]
    assert rows[0].label == "built-in"
    assert "MedSAM2_latest" not in [r.name for r in rows]  # medsam2's default, not twice
    registry = Row("registry", "threshold", "threshold")
    assert row_state(registry) == "ships with the plugin (no weights)"
    chosen = Row("file", "medsam2", "x.pt", "/m/x.pt")
    assert row_state(chosen) == "a file you chose (MedSAM2 checkpoint)"


def test_overlay_arrays():
    assert union(slice(2, 4), slice(7, 9)) == slice(2, 9)
    assert union(slice(2, 4), slice(0, 0)) == slice(2, 4)
    assert union(None, slice(1, 2)) is None
    assert dice_colour(1.0) == (46, 160, 67)
    assert dice_colour(0.0) == (200, 50, 50)
    assert dice_colour(float("nan")) is None
    counts = np.array([[0, 0, 0], [0, 5, 0], [3, 4, 4], [0, 0, 2]])
    assert [m.nonzero()[0].tolist() for m in slice_kinds(counts)] == [[1], [3]]
    present = np.zeros(60, bool)
    present[20:31] = True  # a tumour on 11 slices
    assert slice_extent(present) == (18, 32)
    assert slice_extent(np.ones(5, bool)) == (0, 4)
    assert slice_extent(np.zeros(5, bool)) is None


def test_propagation_texts():
    assert estimate_text(12.0, 8) == "about 1.6 min"
    assert estimate_text(None, 8) == ""
    assert estimate_text(900.0, 8) == "about 2.0 h"
    assert estimate_text(12.0, 8, encodes_once=True) == "about 12 s + 7 decoder passes"
    jobs = PropagationJobs.__new__(PropagationJobs)
    jobs.panel = NS(state=NS(structures={1: "liver", 2: "spleen"}))
    jobs.changes = {1: (0.5, 0.75), 2: (math.nan, 0.9)}
    expected = "re-propagated liver: Dice 0.500 → 0.750; spleen: Dice 0.900"
    assert jobs.describe([1, 2]) == expected


def test_correction_start():
    params = get_protocol("medsam2-3d").params()
    row = {"label": 2, "condition": "clean", "key_slice": 3, "box": "4,5,9,12"}
    folder = NS(params=params, records={"c1": {"status": "ok", "rows": [row]}})
    box = Box(y0=4, x0=5, y1=9, x1=12, index=3, label=2)
    assert protocol_prompts(folder, NS(case_id="c1")) == {2: PromptSet(label=2, prompts=(box,))}
    several = {"model": None, "models": ["builtin", "threshold"]}
    folder = NS(params=get_protocol("medsam2-3d").params.stored(several))
    assert run_model(folder) is None
    assert run_model(folder, NS(pair=("clean @ threshold", "clean @ builtin"))) == "threshold"


def test_results_helpers():
    assert prediction_role("clean") == "clean"
    assert prediction_role("clean @ threshold") == "attacked:clean @ threshold"
    risk = SliceRisk(15, 0.23, {}, (Flag.STOPPED, Flag.UNCERTAIN))
    assert (
        flagged_text(risk) == "slice 15 (risk 0.23): the chain stopped here; the mask is uncertain"
    )
    assert focus_of({"key": K("clean")}) is None
    assert focus_of({"key": K("pgd")}) == "pgd"
    assert focus_of({"key": K("clean", model="threshold")}) == "clean @ threshold"


def test_prompt_layer_data():
    negative = Point(2, 2, index=3, positive=False)
    rnd = NS(prompts=(Box(1, 1, 4, 4, index=2), negative), added=(negative,))
    points, looks, _boxes, edges = prompt_layer_data(rnd, 3)
    assert points[0].tolist() == [3.0, 2.0, 2.0]
    assert looks == [("#ff22ff", 0.04)]
    assert edges == [("#ffffff", 1.5)]
