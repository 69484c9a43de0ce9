"""Videos (box on the first frame, forward) and 2D images (no slice plot)."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._widgets.main import SegEvalWidget
from napari_segeval.metrics import structure_table
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.prompts import box_from_labels
from napari_segeval.prompts.prompt_set import PromptSet
from napari_segeval.propagation import propagate_image

from .conftest import wait_job


def _open(make_napari_viewer, sample):
    import napari_segeval._sample_data as samples

    viewer = make_napari_viewer()
    for data, kwargs, kind in getattr(samples, f"sample_{sample}")():
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    w = SegEvalWidget(viewer)
    w.prompt.backend.setCurrentText("threshold (no weights)")
    return viewer, w


@pytest.mark.slow
def test_video_forward_from_first_frame(make_napari_viewer, qtbot):
    _viewer, w = _open(make_napari_viewer, "video")
    assert w.state.kind() == "video"
    w.state.set_current(1)
    box = w.prompt.tools.box_from_reference()
    assert box == box_from_labels(w.state.reference.data, 1, mode="video")
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    pred = w.state.predictions["clean"].data
    model, image = ThresholdPromptModel(), w.state.image.data
    expected = propagate_image(model, image, [box], kind="video", modality="US").labels
    np.testing.assert_array_equal(pred, expected)
    assert not pred[: box.index].any()
    assert w.dice.plot.isVisibleTo(w.dice)
    dice = structure_table(
        w.state.reference.data, pred, w.state.spacing(), structures={1: "lv_cavity"}, surface=False
    )[0]["dice"]
    assert float(w.dice.cell(1, "Dice")) == pytest.approx(dice, abs=5e-4)


@pytest.mark.slow
def test_rgb_image_box_prompt(make_napari_viewer, qtbot):
    _viewer, w = _open(make_napari_viewer, "polyp")
    assert w.state.kind() == "image"
    assert not w.dice.plot.isVisibleTo(w.dice)
    w.state.set_current(2)  # the polyp sample holds the non-neoplastic lesion
    box = w.prompt.tools.box_from_reference()
    assert w.state.boxes.ndim == 2
    assert w.prompt.tools.prompts() == {2: PromptSet.from_box(box)}
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    assert w.prompt.runner.last_error is None
    pred = w.state.predictions["clean"]
    assert pred.data.shape == w.state.reference.data.shape
    rows = structure_table(
        w.state.reference.data,
        pred.data,
        w.state.spacing(),
        structures=w.state.structures,
        surface=False,
    )
    assert float(w.dice.cell(2, "Dice")) == pytest.approx(rows[1]["dice"], abs=5e-4)
    # painting in 2D updates the table too
    pred.brush_size = 7
    y, x = (box.y0 + box.y1) // 2, (box.x0 + box.x1) // 2
    pred.paint((y, x), 0)
    after = structure_table(
        w.state.reference.data,
        pred.data,
        w.state.spacing(),
        structures=w.state.structures,
        surface=False,
    )[1]["dice"]
    assert after < rows[1]["dice"]
    qtbot.waitUntil(lambda: abs(float(w.dice.cell(2, "Dice")) - after) < 5e-4, timeout=5000)
    # and the attack works on a single image
    w.attack.attack.value = "fgsm"
    w.attack.eps.value = 0.1
    w.attack.run()
    wait_job(qtbot, w.attack.runner)
    assert w.attack.runner.last_error is None
    assert w.state.predictions["attacked"].data.shape == pred.data.shape
