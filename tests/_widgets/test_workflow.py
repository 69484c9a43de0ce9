"""The whole workflow on the CT sample: boxes, propagation, live Dice, attack, cancel, errors."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from napari_segeval.metrics import structure_table
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.prompts import Box, box_from_labels
from napari_segeval.prompts.prompt_set import PromptSet
from napari_segeval.propagation import propagate_image

from .conftest import wait_job


def test_picker_guesses_case_layers(ct_viewer):
    viewer, w = ct_viewer
    assert w.state.image is viewer.layers["ct"]
    assert w.state.reference is viewer.layers["ct reference"]
    assert w.state.structures[1] == "liver"
    assert w.state.kind() == "volume"
    assert len(w.prompt.structure.choices) == len(w.state.structures)


@pytest.mark.slow
def test_boxes_propagation_and_panel_equal_core(ct_viewer, qtbot):
    viewer, w = ct_viewer
    ref = w.state.reference.data
    w.state.set_current(1)
    assert w.prompt.tools.go_to_middle() == box_from_labels(ref, 1).index
    liver = w.prompt.tools.box_from_reference()
    assert liver == box_from_labels(ref, 1)
    # a box drawn by hand for the spleen: rectangle mode, then shape data added
    w.state.set_current(2)
    w.prompt.tools.start_box()
    boxes = w.state.boxes
    assert boxes.mode == "add_rectangle"
    spleen = box_from_labels(ref, 2)
    boxes.add_rectangles([spleen.to_napari(3)])
    prompts = w.prompt.tools.prompts()
    assert prompts == {1: PromptSet.from_box(liver), 2: PromptSet.from_box(spleen)}

    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    pred = w.state.predictions["clean"]
    assert pred is not None and pred in viewer.layers
    # the Dice tab comes to front with the result line, where the person looks
    assert w.tabs.currentWidget() is w.dice and w.dice.result.isVisibleTo(w.dice)
    assert w.dice.result.text() == w.prompt.tools.status.text()
    assert w.dice.result.text().startswith("propagated ")
    model, image = ThresholdPromptModel(), w.state.image.data
    expected = propagate_image(model, image, prompts, kind="volume", modality="CT").labels
    np.testing.assert_array_equal(pred.data, expected)
    # the structure's colour in both layers: the reference's outline its lighter tint
    from napari.utils.colormaps.standardize_color import transform_color

    from napari_segeval._widgets.colours import structure_colour

    names = w.state.structures
    for layer, role in ((pred, "clean"), (w.state.reference, "reference")):
        drawn = transform_color(structure_colour(1, names, role))[0]
        assert layer.get_color(1) == pytest.approx(drawn)
    rows = structure_table(ref, expected, w.state.spacing(), structures=w.state.structures)
    predicted = {row["label"] for row in rows if row["volume_pred_ml"] > 0}
    assert predicted == {1, 2}
    # structures nobody prompted are not listed as failures (Dice 0)
    assert sorted(r["label"] for r in w.dice.records) == [1, 2]
    for row in rows:
        if row["label"] not in predicted:
            continue
        assert float(w.dice.cell(row["label"], "Dice")) == pytest.approx(row["dice"], abs=5e-4)
        assert float(w.dice.cell(row["label"], "Recall")) == pytest.approx(row["recall"], abs=5e-4)
    qtbot.waitUntil(lambda: w.dice.cell(1, "NSD") != "...", timeout=30000)
    assert float(w.dice.cell(1, "NSD")) == pytest.approx(rows[0]["nsd"], abs=5e-4)

    # a paint stroke that erases liver on the key slice
    w.state.set_current(1)
    pred.brush_size = 9
    z, y, x = liver.index, (liver.y0 + liver.y1) // 2, (liver.x0 + liver.x1) // 2
    pred.paint((z, y, x), 0)
    after = structure_table(
        ref, pred.data, w.state.spacing(), structures={1: "liver"}, surface=False
    )[0]["dice"]
    assert after < rows[0]["dice"]
    qtbot.waitUntil(lambda: abs(float(w.dice.cell(1, "Dice")) - after) < 5e-4, timeout=5000)


@pytest.mark.slow
def test_attack_adds_layers_and_compares(ct_viewer, qtbot):
    viewer, w = ct_viewer
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    assert "HU" in w.attack.raw.value
    assert w.attack.raw_epsilon() == pytest.approx(w.attack.eps.value * 400.0)
    w.attack.attack.value = "fgsm"
    w.attack.eps.value = 0.2
    w.attack.run()
    wait_job(qtbot, w.attack.runner)
    assert w.attack.runner.last_error is None
    res = w.attack.result
    attacked = w.state.predictions["attacked"]
    np.testing.assert_array_equal(attacked.data, res.attacked_prediction)
    pert = viewer.layers["ct perturbation"]
    lo, hi = pert.contrast_limits
    assert lo == pytest.approx(-hi) and hi > 0
    assert np.abs(pert.data).max() <= 0.2 * 400.0 + 1e-3
    assert "ct attacked (fgsm)" in viewer.layers
    assert float(w.dice.cell(1, "Dice att.")) == pytest.approx(
        res.attacked_rows[0]["dice"], abs=5e-4
    )
    assert float(w.dice.cell(1, "Dice clean")) == pytest.approx(res.clean_rows[0]["dice"], abs=5e-4)


class _SlowModel(ThresholdPromptModel):
    """The threshold model, slowed down so that a cancel lands mid-propagation."""

    def __init__(self):
        super().__init__()
        self.started = threading.Event()

    def propagate_walks(self, *args):
        self.started.set()
        time.sleep(0.5)
        return super().propagate_walks(*args)


def test_cancel_running_propagation(ct_viewer, qtbot):
    viewer, w = ct_viewer
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    model = _SlowModel()
    w.state.model, w.state.model_key = model, w.prompt.spec()
    n_layers = len(viewer.layers)
    w.prompt.run()
    assert w.prompt.runner.running
    qtbot.waitUntil(model.started.is_set, timeout=10000)
    with qtbot.waitSignal(w.prompt.runner.job_done, timeout=20000) as blocker:
        w.prompt.runner.cancel_button.click()
    assert blocker.args[1] == "cancelled"
    assert "cancelled" in w.prompt.runner.status.text()
    assert len(viewer.layers) == n_layers
    assert w.state.predictions["clean"] is None


def test_bad_checkpoint_is_a_notification(ct_viewer, qtbot, tmp_path, notifications):
    _viewer, w = ct_viewer
    bad = tmp_path / "weights.pt"
    bad.write_bytes(b"this is not a checkpoint")
    w.prompt.picker.use_file(bad, "builtin")  # unchecked, as segeval demo --checkpoint
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    assert "weights.pt" in (w.prompt.runner.last_error or "")
    assert any("weights.pt" in m for m in notifications())
    assert w.state.predictions["clean"] is None


def test_run_without_box_is_a_notification(ct_viewer, notifications):
    _viewer, w = ct_viewer
    w.prompt.run_button.click()
    assert any("no prompt yet" in m for m in notifications())
    w.attack.run_button.click()
    assert any("run propagation first" in m for m in notifications())


def test_box_prompts_replace_per_structure(ct_viewer):
    _viewer, w = ct_viewer
    w.state.set_current(1)
    w.prompt.tools.set_box(Box(10, 10, 20, 20, index=5, label=1))
    w.prompt.tools.box_from_reference()
    assert len(w.state.boxes.data) == 1
    assert w.prompt.tools.prompts() == {
        1: PromptSet.from_box(box_from_labels(w.state.reference.data, 1))
    }
