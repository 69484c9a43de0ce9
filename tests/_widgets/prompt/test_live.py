"""Propagation you can watch: partial slices in the viewer while it runs; cancel cleans up."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.models.walk import WALK_DEFAULTS
from napari_segeval.propagation import propagate_image

from ..conftest import wait_job

PARTIAL = "ct prediction (propagating)"


class _SlowSteps(ThresholdPromptModel):
    """The threshold model, slowed down per slice (so a person - or a test - can watch)."""

    def __init__(self, delay=0.05):
        super().__init__()
        self.delay = delay
        self.release = threading.Event()
        self.release.set()

    def propagate_walks(self, frames, walks, options=WALK_DEFAULTS):
        on_frame = options.on_frame

        def slow(i, f, prob):
            on_frame(i, f, prob)
            time.sleep(self.delay)
            self.release.wait(30)

        options = replace(options, on_frame=None if on_frame is None else slow)
        return super().propagate_walks(frames, walks, options)


def _partial(viewer):
    return next((layer for layer in viewer.layers if layer.name == PARTIAL), None)


@pytest.mark.slow
def test_slices_appear_before_the_propagation_ends(ct_viewer, qtbot):
    viewer, w = ct_viewer
    w.state.set_current(1)
    box = w.prompt.tools.box_from_reference()
    model = _SlowSteps()
    model.release.clear()  # hold the walk after its first slice
    w.state.model, w.state.model_key = model, w.prompt.spec()
    seen = []  # (worker still running, slices painted, liver voxels in the partial layer)
    live, paint = w.prompt.live, w.prompt.live.paint

    def watched(*report):
        paint(*report)
        seen.append(
            (
                w.prompt.runner.running,
                live.updates,
                int((_partial(viewer).data == 1).sum()) if _partial(viewer) is not None else -1,
            )
        )

    live.paint = watched  # what the panel relays to the main thread
    n_layers = len(viewer.layers)
    w.prompt.run()
    qtbot.waitUntil(lambda: w.prompt.live.updates >= 1, timeout=20000)
    partial = _partial(viewer)
    assert w.prompt.runner.running and partial is not None
    # the prompted slice first, on the reference's grid and colours
    assert partial.data[box.index].any() and not np.delete(partial.data, box.index, 0).any()
    assert partial.scale[0] == w.state.reference.scale[0]
    model.release.set()
    wait_job(qtbot, w.prompt.runner)
    assert seen and seen[0][0] and seen[-1][1] > 1
    assert any(running and voxels > 0 for running, _n, voxels in seen)
    # the final merged prediction replaces the partial layer
    assert PARTIAL not in viewer.layers
    assert len(viewer.layers) == n_layers + 1
    pred = w.state.predictions["clean"]
    model, image, prompts = ThresholdPromptModel(), w.state.image.data, w.prompt.tools.prompts()
    expected = propagate_image(model, image, prompts, kind="volume", modality="CT").labels
    np.testing.assert_array_equal(pred.data, expected)


def test_cancel_removes_the_partial_result(ct_viewer, qtbot):
    viewer, w = ct_viewer
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    model = _SlowSteps()
    model.release.clear()
    w.state.model, w.state.model_key = model, w.prompt.spec()
    n_layers = len(viewer.layers)
    w.prompt.run()
    qtbot.waitUntil(lambda: _partial(viewer) is not None, timeout=20000)
    assert _partial(viewer).data.any()
    with qtbot.waitSignal(w.prompt.runner.job_done, timeout=20000) as blocker:
        w.prompt.runner.cancel_button.click()
        model.release.set()
    assert blocker.args[1] == "cancelled"
    qtbot.wait(50)  # reports still queued are ignored
    assert PARTIAL not in viewer.layers
    assert len(viewer.layers) == n_layers
    assert w.state.predictions["clean"] is None


def test_live_layer_on_a_2d_image(make_napari_viewer, qtbot):
    from napari_segeval._widgets._state import ViewerState
    from napari_segeval._widgets.prompt.live import LiveLabels

    viewer = make_napari_viewer()
    state = ViewerState()
    state.set_image(viewer.add_image(np.zeros((8, 9), np.float32), name="img"))
    live = LiveLabels(viewer, state)
    paint = live.start("img prediction (propagating)", (8, 9))
    mask = np.zeros((8, 9), bool)
    mask[2:4, 3:6] = True
    paint(3, 0, mask)
    assert live.updates == 1
    assert (live.layer.data == 3).sum() == 6
    paint(3, 0, np.zeros((8, 9), bool))  # a later report of the slice replaces it
    assert live.updates == 2
    assert not live.layer.data.any()
    live.stop()
    assert "img prediction (propagating)" not in viewer.layers
    paint(3, 0, mask)  # after stop: ignored
    assert live.layer is None and "img prediction (propagating)" not in viewer.layers


def test_deleting_the_image_mid_propagation_leaves_no_partial_or_wrong_layer(
    ct_viewer, qtbot, notifications
):
    viewer, w = ct_viewer
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    model = _SlowSteps(delay=0.0)  # held by ``release``; no need to slow the rest down
    model.release.clear()  # hold the walk after its first slice
    w.state.model, w.state.model_key = model, w.prompt.spec()
    names = [layer.name for layer in viewer.layers]
    w.prompt.run()
    qtbot.waitUntil(lambda: _partial(viewer) is not None, timeout=20000)
    viewer.layers.remove(w.state.image)
    with qtbot.waitSignal(w.prompt.runner.job_done, timeout=20000) as blocker:
        model.release.set()
    assert blocker.args == ["propagation", "dropped"]
    qtbot.wait(50)  # reports still queued are dropped
    assert [layer.name for layer in viewer.layers] == [n for n in names if n != "ct"]
    assert w.state.predictions["clean"] is None
    assert "propagation dropped: layer 'ct' was removed" in notifications()


def test_a_re_propagation_starts_from_the_prediction_shown(make_napari_viewer):
    from napari_segeval._widgets._state import ViewerState
    from napari_segeval._widgets.prompt.live import LiveLabels

    viewer = make_napari_viewer()
    state = ViewerState()
    state.set_image(viewer.add_image(np.zeros((3, 8, 9), np.float32), name="img"))
    shown = np.zeros((3, 8, 9), np.uint8)
    shown[:, :2] = 1
    shown[:, 5:] = 2
    pred = viewer.add_labels(shown.copy(), name="img prediction")
    live = LiveLabels(viewer, state)
    paint = live.start(
        "img prediction (propagating)", (3, 8, 9), base=pred.data, clear=[2], hide=pred
    )
    assert pred.visible  # nothing shown yet: nothing hidden
    mask = np.zeros((8, 9), bool)
    mask[3:5] = True
    paint(2, 1, mask)
    assert not pred.visible
    data = live.layer.data
    assert (data == 1).sum() == (shown == 1).sum()  # the structure not propagated stays
    assert (data == 2).sum() == mask.sum() and (data[1] == 2).sum() == mask.sum()
    np.testing.assert_array_equal(pred.data, shown)  # the prediction is not touched
    live.stop()
    assert pred.visible and "img prediction (propagating)" not in viewer.layers
