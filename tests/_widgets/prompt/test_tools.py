"""The prompt tools: the list, delete and undo, prompts files, bad input, what a model takes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from napari_segeval._errors import InvalidPromptError
from napari_segeval._widgets.jobs.tasks import Capability, capability
from napari_segeval.prompts import Box, box_from_labels
from napari_segeval.prompts.prompt_file import PromptFile, read_prompts, write_prompts
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet

from ..conftest import wait_job


def _layer_names(viewer):
    return [layer.name for layer in viewer.layers]


def test_list_delete_and_undo(ct_viewer, qtbot):
    _viewer, w = ct_viewer
    tools = w.prompt.tools
    w.state.set_current(1)
    box = w.prompt.tools.box_from_reference()
    tools.start_points(True).add([box.index + 3, 50, 40])
    tools.start_points(False).add([box.index + 3, 52, 44])
    qtbot.waitUntil(lambda: tools.list.count() == 3, timeout=5000)
    w.state.set_current(2)  # the list shows the selected structure's prompts only
    assert tools.list.count() == 0
    w.state.set_current(1)
    assert tools.list.count() == 3
    tools.list.setCurrentRow(1)
    tools.buttons["delete"].click()
    assert w.prompt.tools.prompts() == {
        1: PromptSet.of([box, Point(52, 44, index=box.index + 3, positive=False)])
    }
    tools.buttons["undo"].click()
    assert w.prompt.tools.prompts() == {1: PromptSet.from_box(box)}
    tools.list.setCurrentRow(0)
    tools.list.itemClicked.emit(tools.list.item(0))  # clicking a row shows its slice
    assert w.dice.current_slice() == box.index


def test_prompts_file_round_trip(ct_viewer, qtbot, tmp_path, notifications):
    _viewer, w = ct_viewer
    tools = w.prompt.tools
    ref = np.asarray(w.state.reference.data)
    w.state.set_current(3)
    box = w.prompt.tools.box_from_reference()
    tools.start_points(False).add([box.index, box.y0 + 1, box.x0 + 1])
    qtbot.waitUntil(lambda: tools.list.count() == 2, timeout=5000)
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    drawn = w.prompt.tools.prompts()
    path = tools.save_prompts(tmp_path / "case.prompts.json")
    saved = read_prompts(path)
    assert saved.sets == drawn and saved.shape == (40, 112, 112)
    assert saved.names == {1: "liver", 3: "kidney_right"}
    with pytest.raises(Exception, match="exists"):
        tools.save_prompts(path)  # never over a file unless asked
    # another session of prompts, then the file again: exactly the saved ones
    w.prompt.tools.box_from_reference()
    tools.start_over({2: PromptSet.from_box(box_from_labels(ref, 2))})
    assert list(w.prompt.tools.prompts()) == [2]
    tools.buttons["load"].setEnabled(True)
    tools.load_prompts(path)
    assert w.prompt.tools.prompts() == drawn
    # a mask prompt travels too (it has no layer)
    mask = MaskPrompt(ref[20] == 1, index=20, label=1)
    write_prompts(tmp_path / "mask.json", PromptFile({1: PromptSet.of([mask])}, (40, 112, 112)))
    tools.load_prompts(tmp_path / "mask.json")
    assert w.prompt.tools.prompts() == {1: PromptSet.of([mask])}
    w.state.set_current(1)
    assert tools.list.item(0).text() == f"1. mask ({mask.area} pixels) on slice 20"
    assert not any("failed" in m for m in notifications())


@pytest.mark.parametrize(
    "what", ["malformed", "not json", "other shape", "unknown structure", "mask shape", "missing"]
)
def test_bad_prompts_files_are_one_notification(ct_viewer, tmp_path, notifications, what):
    viewer, w = ct_viewer
    w.state.set_current(1)
    box = w.prompt.tools.box_from_reference()
    before, names = w.prompt.tools.prompts(), _layer_names(viewer)
    path = tmp_path / "bad.json"
    good = PromptFile({1: PromptSet.from_box(box)}, (40, 112, 112)).to_json()
    if what == "malformed":
        path.write_text(
            json.dumps(
                {**good, "structures": [{"label": 1, "prompts": [{"type": "box", "index": 3}]}]}
            )
        )
    elif what == "not json":
        path.write_text("{not json")
    elif what == "other shape":
        path.write_text(json.dumps({**good, "shape": [40, 64, 64]}))
    elif what == "unknown structure":
        write_prompts(
            path, PromptFile({9: PromptSet.from_box(Box(1, 1, 5, 5, index=3, label=9))}, None)
        )
    elif what == "mask shape":
        write_prompts(
            path, PromptFile({1: PromptSet.of([MaskPrompt(np.ones((8, 8), bool), index=3)])}, None)
        )
    w.prompt.tools.buttons["load"].setEnabled(True)
    from napari_segeval._widgets.jobs.worker import run_guarded

    run_guarded("Load prompts", lambda: w.prompt.tools.load_prompts(path))
    errors = [m for m in notifications() if "failed" in m]
    assert len(errors) == 1 and str(path) in errors[0]
    assert {
        "malformed": "malformed",
        "not json": "not a JSON",
        "other shape": "[40, 64, 64]",
        "unknown structure": "unknown structure 9",
        "mask shape": "8 x 8",
        "missing": "no such",
    }[what] in errors[0]
    assert w.prompt.tools.prompts() == before and _layer_names(viewer) == names


def test_bad_prompts_in_the_viewer_are_one_notification(ct_viewer, qtbot, notifications):
    viewer, w = ct_viewer
    tools = w.prompt.tools
    w.state.set_current(2)
    boxes = tools.start_box()
    boxes.add_rectangles([Box(150, 150, 170, 170, index=20, label=2).to_napari(3)])
    qtbot.waitUntil(lambda: len(boxes.data) == 0, timeout=5000)  # removed again
    points = tools.start_points(True)
    points.add([55, 30, 30])  # slice 55 of 40
    qtbot.waitUntil(lambda: len(points.data) == 0, timeout=5000)
    msgs = [m for m in notifications() if m.startswith("prompt not added")]
    assert len(msgs) == 2
    assert "outside the 112 x 112 slice" in msgs[0] and "slice 55 does not exist" in msgs[1]
    # a negative click as a structure's only prompt: nothing runs, no layer appears
    points = tools.start_points(False)
    points.add([20, 60, 60])
    qtbot.waitUntil(lambda: tools.list.count() == 1, timeout=5000)
    names = _layer_names(viewer)
    before = len(notifications())
    tools.buttons["repropagate"].click()
    assert not w.prompt.runner.running
    said = notifications()[before:]
    assert len(said) == 1 and "only negative points" in said[0]
    assert _layer_names(viewer) == names and w.state.predictions["clean"] is None
    # in a 3D view prompts are refused with the reason
    viewer.dims.ndisplay = 3
    tools.buttons["box"].click()
    assert any("2D view" in m for m in notifications())
    viewer.dims.ndisplay = 2


def _viewer_of(make_napari_viewer, sample):
    from napari_segeval import _sample_data
    from napari_segeval._widgets.main import SegEvalWidget

    viewer = make_napari_viewer()
    for data, kwargs, kind in getattr(_sample_data, sample)():
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    w = SegEvalWidget(viewer)
    w.prompt.backend.setCurrentText("threshold (no weights)")
    return viewer, w


@pytest.mark.parametrize("sample", ["sample_video", "sample_polyp"])
def test_bad_prompts_on_videos_and_2d_images(make_napari_viewer, qtbot, notifications, sample):
    """Outside the frame, on a frame that does not exist, only negative: one notification
    each, the prompt removed, nothing run, no layer left behind."""
    viewer, w = _viewer_of(make_napari_viewer, sample)
    tools = w.prompt.tools
    n, h, wd = tools.layers.frame_shape()
    video = sample == "sample_video"
    w.state.set_current(1)
    points = tools.start_points(True)
    points.add([2, h + 10, wd + 10] if video else [h + 10, wd + 10])  # outside the frame
    qtbot.waitUntil(lambda: len(points.data) == 0, timeout=5000)
    boxes = tools.start_box()
    if video:  # a frame after the last
        boxes.add_rectangles([Box(1, 1, 5, 5, index=n + 3, label=1).to_napari(3)])
    else:  # a box beyond the image's corner
        boxes.add_rectangles([Box(h + 2, wd + 2, h + 20, wd + 20, index=0).to_napari(2)])
    qtbot.waitUntil(lambda: len(boxes.data) == 0, timeout=5000)
    msgs = [m for m in notifications() if m.startswith("prompt not added")]
    assert len(msgs) == 2 and f"outside the {h} x {wd} frame" in msgs[0]
    assert (f"frame {n + 3} does not exist" if video else "outside") in msgs[1]
    assert tools.list.count() == 0
    tools.start_points(False).add([1, h // 2, wd // 2] if video else [h // 2, wd // 2])
    qtbot.waitUntil(lambda: tools.list.count() == 1, timeout=5000)
    names, before = [ly.name for ly in viewer.layers], len(notifications())
    with pytest.raises(InvalidPromptError, match="only negative points"):
        w.prompt.run()  # refused before anything starts ...
    tools.buttons["repropagate"].click()  # ... and the button says it once
    said = notifications()[before:]
    assert len(said) == 1 and "only negative points" in said[0]
    assert not w.prompt.runner.running and w.state.predictions["clean"] is None
    assert [ly.name for ly in viewer.layers] == names


def test_a_dense_prediction_is_said_not_promptable(ct_viewer):
    """After a dense segmentation the tools stay, with a line saying that model takes no
    prompts; a promptable model's prediction takes the line away."""
    _viewer, w = ct_viewer
    tools = w.prompt.tools
    w.state.set_model(object(), ("dense", "builtin-ct", False, "cpu"), "dense")
    assert "builtin-ct, a dense model: it takes no prompts" in tools.info.text()
    assert not tools.info.isHidden()
    assert all(b.isEnabled() for b in tools.buttons.values())  # not hidden, not disabled
    w.state.set_model(object(), ("dense", "/models/Dataset001", False, "cpu"), "dense")
    assert tools.info.text().startswith("the prediction shown comes from Dataset001")
    from napari_segeval.models.threshold import ThresholdPromptModel

    w.state.set_model(ThresholdPromptModel(), w.prompt.spec(), "promptable")
    assert tools.info.isHidden() and tools.info.text() == ""


def test_prompt_layers_map_world_coordinates(ct_viewer, qtbot):
    _viewer, w = ct_viewer
    tools = w.prompt.tools
    w.state.set_current(1)
    points = tools.start_points(True)
    image = w.state.image
    points.scale = tuple(2 * s for s in image.scale)  # a layer placed otherwise
    points.add([5, 20, 20])  # data coordinates of the points layer
    qtbot.waitUntil(lambda: tools.list.count() == 1, timeout=5000)
    assert w.prompt.tools.prompts() == {1: PromptSet.of([Point(40, 40, index=10)])}
    assert np.allclose(image.world_to_data(points.data_to_world([5, 20, 20])), [10, 40, 40])


@pytest.mark.slow
def test_what_a_model_takes_enables_the_tools(ct_viewer, qtbot, box_only_weights):
    _viewer, w = ct_viewer
    tools = w.prompt.tools
    assert capability(("threshold", None, "cpu")) == Capability(True, True)
    assert tools.buttons["positive"].isEnabled() and not tools.reason.isVisible()
    # the shipped built-in weights take clicks: once loaded, the point tools stay on
    w.prompt.backend.setCurrentText("built-in")
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    assert tools.buttons["positive"].isEnabled() and tools.buttons["negative"].isEnabled()
    # built-in weights of four input channels take boxes only: the point tools say so
    w.prompt.picker.use_file(box_only_weights, "builtin")
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    for key in ("positive", "negative"):
        assert not tools.buttons[key].isEnabled()
        assert "not points" in tools.buttons[key].toolTip()
    assert tools.buttons["box"].isEnabled()
    assert "not points" in tools.reason.text() and not tools.reason.isHidden()
    # a dense model takes no prompts at all: every tool off, the reason shown
    tools.set_capability(capability(("builtin-ct", None, "cpu")))
    assert not any(b.isEnabled() for b in tools.buttons.values())
    assert "dense model" in tools.reason.text() and not tools.reason.isHidden()
    w.prompt.backend.setCurrentText("threshold (no weights)")
    assert tools.buttons["negative"].isEnabled() and tools.reason.isHidden()


def test_the_built_in_model_is_checked_when_the_tab_is_shown(ct_viewer, qtbot, box_only_weights):
    viewer, w = ct_viewer
    viewer.window.add_dock_widget(w, name="Evaluate")
    w.prompt.picker.use_file(box_only_weights, "builtin")
    w.tabs.setCurrentWidget(w.prompt)
    viewer.window._qt_window.show()
    qtbot.waitUntil(lambda: w.prompt.cached_model() is not None, timeout=60000)
    qtbot.waitUntil(lambda: not w.prompt.tools.buttons["positive"].isEnabled(), timeout=5000)
    assert not w.prompt.probe.running
