"""Corrections in the Prompt tab: a box on another slice, clicks, re-propagation, live Dice."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import ndimage

from napari_segeval.cli import main
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.prompts import Box, box_from_labels
from napari_segeval.prompts.prompt_set import Point, PromptSet
from napari_segeval.propagation import propagate_image

from ...conftest import SAMPLE_DATA
from ..conftest import wait_job

CT_LABELS = SAMPLE_DATA / "ct" / "ct_001_labels.nii.gz"


def _worst_false_positive(ref, pred, label):
    """(slice, y, x) deepest inside the largest false-positive area of ``label``."""
    fp = (pred == label) & (ref != label)
    k = int(np.argmax(fp.reshape(fp.shape[0], -1).sum(axis=1)))
    depth = ndimage.distance_transform_edt(fp[k])
    y, x = np.unravel_index(int(np.argmax(depth)), depth.shape)
    return k, int(y), int(x)


def _expected(w, sets, kind="volume", modality="CT"):
    return propagate_image(
        ThresholdPromptModel(), np.asarray(w.state.image.data), sets, kind=kind, modality=modality
    ).labels


def _metrics_json(path, capsys) -> dict[int, float]:
    capsys.readouterr()
    assert main(["metrics", str(CT_LABELS), str(path), "--json", "--no-surface"]) == 0
    return {r["label"]: r["dice"] for r in json.loads(capsys.readouterr().out)["structures"]}


@pytest.mark.slow
def test_box_on_another_slice_and_a_negative_click_repropagate_one_structure(
    ct_viewer, qtbot, tmp_path, capsys
):
    _viewer, w = ct_viewer
    tools = w.prompt.tools
    ref = np.asarray(w.state.reference.data)
    for label in (1, 2):
        w.state.set_current(label)
        w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    pred = w.state.predictions["clean"]
    spleen_before = np.asarray(pred.data) == 2
    liver_before = float(w.dice.cell(1, "Dice"))
    # a person draws a box on slice 31 and clicks where the liver is not, on another slice
    w.state.set_current(1)
    boxes = tools.start_box()
    assert boxes.mode == "add_rectangle"
    extra = Box.from_mask(ref[31] == 1, index=31, label=1)
    boxes.add_rectangles([extra.to_napari(3)])
    k, y, x = _worst_false_positive(ref, np.asarray(pred.data), 1)
    points = tools.start_points(positive=False)
    assert points.mode == "add"
    points.add([k, y, x])
    qtbot.waitUntil(lambda: tools.list.count() == 3, timeout=5000)
    assert [tools.list.item(i).text() for i in range(3)][1:] == [
        f"2. box (y0={extra.y0}, x0={extra.x0}, y1={extra.y1}, x1={extra.x1}) on slice 31",
        f"3. - point (y={y}, x={x}) on slice {k}",
    ]
    assert points.face_color[0] == pytest.approx([1.0, 34 / 255, 1.0, 1.0])  # magenta
    tools.buttons["repropagate"].click()
    assert w.prompt.runner.worker_name == "re-propagation"
    wait_job(qtbot, w.prompt.runner)
    assert w.prompt.runner.last_error is None
    session = w.prompt.jobs.session
    assert session.last_propagated == [1]
    assert w.state.predictions["clean"] is pred  # the same layer, new data
    liver = PromptSet.of(
        [box_from_labels(ref, 1), extra, Point(y, x, index=k, label=1, positive=False)]
    )
    sets = {1: liver, 2: PromptSet.from_box(box_from_labels(ref, 2))}
    assert w.state.prompts == sets
    np.testing.assert_array_equal(pred.data, _expected(w, sets))
    np.testing.assert_array_equal(np.asarray(pred.data) == 2, spleen_before)
    # the Dice tab equals `segeval metrics` on the saved result, and the liver improved
    out = w.export.save_prediction(tmp_path / "corrected.nii.gz", "clean")
    dice = _metrics_json(out, capsys)
    for label in (1, 2):
        assert float(w.dice.cell(label, "Dice")) == pytest.approx(dice[label], abs=5e-4)
    assert dice[1] > liver_before + 0.05
    assert (
        tools.status.text().startswith("re-propagated liver: Dice ") and "→" in tools.status.text()
    )
    # nothing changed: nothing runs
    assert w.prompt.repropagate() is None
    assert "no prompt changed" in tools.status.text()


@pytest.mark.slow
def test_after_each_prompt_repropagates_and_undo_goes_back(ct_viewer, qtbot):
    _viewer, w = ct_viewer
    tools = w.prompt.tools
    ref = np.asarray(w.state.reference.data)
    w.state.set_current(4)
    w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    first = np.asarray(w.state.predictions["clean"].data).copy()
    tools.auto.setChecked(True)
    box = box_from_labels(ref, 4)
    far = int(np.flatnonzero((ref == 4).any(axis=(1, 2)))[-1])
    ys, xs = np.nonzero(ref[far] == 4)
    points = tools.start_points(positive=True)
    points.add([far, int(ys[len(ys) // 2]), int(xs[len(xs) // 2])])
    qtbot.waitUntil(lambda: w.prompt.runner.running, timeout=5000)
    wait_job(qtbot, w.prompt.runner)
    clicked = np.asarray(w.state.predictions["clean"].data).copy()
    sets = {4: PromptSet.of([box, Point(ys[len(ys) // 2], xs[len(xs) // 2], index=far, label=4)])}
    np.testing.assert_array_equal(clicked, _expected(w, sets))
    tools.buttons["undo"].click()
    assert tools.list.count() == 1
    qtbot.waitUntil(
        lambda: (
            not w.prompt.runner.running and np.array_equal(w.state.predictions["clean"].data, first)
        ),
        timeout=30000,
    )


@pytest.mark.slow
def test_video_prompt_on_a_later_frame(make_napari_viewer, qtbot):
    from napari_segeval._sample_data import sample_video
    from napari_segeval._widgets.main import SegEvalWidget

    viewer = make_napari_viewer()
    for data, kwargs, kind in sample_video():
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    w = SegEvalWidget(viewer)
    w.prompt.backend.setCurrentText("threshold (no weights)")
    ref = np.asarray(w.state.reference.data)
    w.state.set_current(1)
    first = w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    later = first.index + 12
    extra = Box.from_mask(ref[later] == 1, index=later, label=1)
    w.prompt.tools.start_box().add_rectangles([extra.to_napari(3)])
    qtbot.waitUntil(lambda: w.prompt.tools.list.count() == 2, timeout=5000)
    assert w.prompt.tools.list.item(1).text().endswith(f"on frame {later}")
    w.prompt.repropagate()
    wait_job(qtbot, w.prompt.runner)
    pred = np.asarray(w.state.predictions["clean"].data)
    sets = {1: PromptSet.of([first, extra])}
    np.testing.assert_array_equal(pred, _expected(w, sets, "video", "US"))
    assert not pred[: first.index].any()
    assert w.prompt.jobs.session.last_propagated == [1]


@pytest.mark.slow
def test_click_on_a_2d_image(make_napari_viewer, qtbot):
    from napari_segeval._sample_data import sample_polyp
    from napari_segeval._widgets.main import SegEvalWidget

    viewer = make_napari_viewer()
    for data, kwargs, kind in sample_polyp():
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    w = SegEvalWidget(viewer)
    w.prompt.backend.setCurrentText("threshold (no weights)")
    ref = np.asarray(w.state.reference.data)
    w.state.set_current(2)
    box = w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    ys, xs = np.nonzero(ref == 2)
    points = w.prompt.tools.start_points(positive=True)
    assert points.ndim == 2
    points.add([ys[0], xs[0]])
    qtbot.waitUntil(lambda: w.prompt.tools.list.count() == 2, timeout=5000)
    w.prompt.repropagate()
    wait_job(qtbot, w.prompt.runner)
    assert w.prompt.runner.last_error is None
    pred = np.asarray(w.state.predictions["clean"].data)
    assert pred.shape == ref.shape
    sets = {2: PromptSet.of([box, Point(ys[0], xs[0], index=0, label=2)])}
    np.testing.assert_array_equal(pred, _expected(w, sets, "image", w.state.modality()))
    assert "1. box" in w.prompt.tools.list.item(0).text()
    assert "on frame 0" in w.prompt.tools.list.item(1).text()


@pytest.mark.slow
def test_built_in_network_with_click_channels(ct_viewer, qtbot, tmp_path):
    import torch

    from napari_segeval.models._prompt_net import PromptUNet
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel, save_weights

    _viewer, w = ct_viewer
    torch.manual_seed(0)
    path = tmp_path / "clicks.pt"
    save_weights(
        PromptUNet(width=4, depth=2, in_channels=6).eval(),
        path,
        {"width": 4, "depth": 2, "size": 16, "in_channels": 6},
    )
    w.prompt.picker.use_file(path, "builtin")
    w.prompt.device.value = "cpu"
    w.state.set_current(1)
    box = w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    assert w.prompt.tools.buttons["positive"].isEnabled()
    w.prompt.tools.start_points(True).add(
        [box.index, (box.y0 + box.y1) // 2, (box.x0 + box.x1) // 2]
    )
    w.prompt.repropagate()
    wait_job(qtbot, w.prompt.runner)
    assert w.prompt.runner.last_error is None
    sets = w.prompt.tools.prompts()
    expected = propagate_image(
        BuiltinPromptModel(path, device="cpu"),
        np.asarray(w.state.image.data),
        sets,
        kind="volume",
        modality="CT",
    ).labels
    np.testing.assert_array_equal(w.state.predictions["clean"].data, expected)


def test_propagation_progress_is_monotonic_to_its_total(ct_viewer, qtbot, monkeypatch):
    """The Prompt tab's bar hears one total and a count that never goes back and ends there."""
    viewer, w = ct_viewer
    heard: list[tuple[int, int]] = []
    runner = w.prompt.runner
    shown = runner._on_progress
    monkeypatch.setattr(
        runner, "_on_progress", lambda job, d, t: (heard.append((d, t)), shown(job, d, t))
    )
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, runner)
    assert runner.last_error is None and heard
    totals = {t for _, t in heard}
    assert len(totals) == 1  # one total: the slices of both directions
    done = [d for d, _ in heard]
    assert done == sorted(done) and done[-1] == totals.pop()
    steps = np.diff([0, *done])
    assert (steps >= 0).all() and np.median(steps) == 1  # a slice at a time


def test_a_propagation_draws_each_structures_risk_beside_its_dice(ct_viewer, qtbot):
    from napari_segeval.evaluation.triage import crop_slices
    from napari_segeval.uncertainty.risk import structure_risk

    _viewer, w = ct_viewer
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    assert w.prompt.runner.last_error is None
    # the same propagation outside the viewer: its risk, from the trace of its walks
    res = propagate_image(
        ThresholdPromptModel(),
        np.asarray(w.state.image.data),
        w.prompt.tools.prompts(),
        kind="volume",
        modality="CT",
    )
    s = res.structures[1]
    want = structure_risk(1, res.labels == 1, crop_slices(s), trace=s.trace)
    got = w.state.risk[1]
    assert got.risk == pytest.approx(want.risk) and got.stops == want.stops
    assert [x.slice for x in got.slices] == [x.slice for x in want.slices]
    plot = w.dice.plot
    assert np.flatnonzero(np.isfinite(plot.risk)).tolist() == [x.slice for x in want.slices]
    assert set(plot.series) == {"clean"} and plot.y_title() == "Dice, risk"
