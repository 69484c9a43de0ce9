"""From the results browser to a correction: open the failing case, prompt, re-score, save."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from napari_segeval._widgets.demo import show_results
from napari_segeval.io import read_labels
from napari_segeval.metrics import overlap_metrics
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_file import read_prompts
from napari_segeval.prompts.prompt_set import Point, PromptSet

from ..conftest import wait_job

TASK = Path(__file__).resolve().parents[3] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"


def _run(tmp_path_factory, name: str, protocol: str, params: dict, n: int = 1, task=TASK) -> Path:
    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.evaluation.layouts import load_layout

    out = tmp_path_factory.mktemp(name) / "results"
    run_evaluation(load_layout(task)[:n], protocol, out, params=params, workers=1, report=False)
    return out


@pytest.fixture(scope="module")
def threshold_run(tmp_path_factory):
    """medsam2-3d with the threshold model on two cases: its rows record the boxes."""
    return _run(tmp_path_factory, "thr", "medsam2-3d", {"model": "threshold"}, n=2)


@pytest.fixture(scope="module")
def dense_run(tmp_path_factory):
    """msd-robust (the built-in dense CT model) on one case cropped in-plane to one window
    of the model (:mod:`_small_sample`: all five structures kept), no attack."""
    from _small_sample import cropped_sample

    task = cropped_sample(tmp_path_factory.mktemp("dense-data"), 1)
    return _run(tmp_path_factory, "dense", "msd-robust", {"attacks": []}, task=task)


def _shown(viewer, qtbot, path):
    panel = show_results(viewer, path)
    qtbot.waitUntil(lambda: panel.loaded is not None and not panel.runner.running, timeout=60000)
    dice = panel.evaluate.dice
    qtbot.waitUntil(
        lambda: not dice.surface_runner.running and not dice.surface_timer.isActive(),
        timeout=60000,
    )
    return panel


def _settle(panel, qtbot):
    dice = panel.evaluate.dice
    qtbot.waitUntil(
        lambda: not dice.surface_runner.running and not dice.surface_timer.isActive(),
        timeout=60000,
    )


@pytest.mark.slow
def test_correct_the_failing_case_and_save_it_with_its_prompts(
    threshold_run, tmp_path, make_napari_viewer, qtbot
):
    out = tmp_path / "copy"
    shutil.copytree(threshold_run, out)
    viewer = make_napari_viewer()
    panel = _shown(viewer, qtbot, out)
    loaded = panel.loaded
    label = 1  # the liver: a click in what the threshold model missed brings it in
    panel.state.set_current(label)
    saved = np.asarray(loaded.predictions["clean"]).copy()
    ref = np.asarray(loaded.case.labels)
    panel.correct_button.click()
    evaluate = panel.evaluate
    prompt = evaluate.prompt
    assert evaluate.tabs.currentWidget() is prompt
    assert prompt.backend.currentText() == "threshold (no weights)"
    assert "the protocol's boxes" in prompt.tools.info.text()
    record = {r["label"]: r for r in panel.folder.records[loaded.case_id]["rows"]}
    start = prompt.tools.prompts()
    assert sorted(start) == sorted(record)
    y0, x0, y1, x1 = (int(v) for v in record[label]["box"].split(","))
    assert start[label] == PromptSet.from_box(
        Box(y0, x0, y1, x1, index=record[label]["key_slice"], label=label)
    )
    # a positive click deep inside what the prediction misses, on its worst slice
    missed = (ref == label) & (saved != label)
    k = int(np.argmax(missed.reshape(missed.shape[0], -1).sum(axis=1)))
    depth = ndimage.distance_transform_edt(missed[k])
    y, x = np.unravel_index(int(np.argmax(depth)), depth.shape)
    prompt.tools.start_points(True).add([k, y, x])
    qtbot.waitUntil(lambda: prompt.tools.list.count() == 2, timeout=5000)
    prompt.tools.buttons["repropagate"].click()
    wait_job(qtbot, prompt.runner)
    assert prompt.runner.last_error is None
    assert prompt.jobs.session.last_propagated == [label]  # the others are the saved ones
    corrected = panel.layers.layers["corrected"]
    assert panel.state.predictions["clean"] is corrected
    assert corrected.name == f"{loaded.case_id} corrected"
    assert not panel.layers.layers["clean"].visible and corrected.visible
    new = np.asarray(corrected.data)
    others = (saved != label) & (new != label)
    np.testing.assert_array_equal(new[others], saved[others])
    before = overlap_metrics(ref, saved, labels=[label])[label]["dice"]
    after = overlap_metrics(ref, new, labels=[label])[label]["dice"]
    assert after > before
    _settle(panel, qtbot)
    assert float(evaluate.dice.cell(label, "Dice")) == pytest.approx(after, abs=5e-4)
    assert f"Dice {before:.3f} → {after:.3f}" in prompt.tools.status.text()
    # saved with its prompts beside it, never over an earlier save
    assert panel.correction.currentText() == "corrected"
    first = panel.save_correction()
    second = panel.save_correction()
    folder = out / "corrections" / loaded.case_id
    assert first.parent == folder and first.name.startswith("corrected.")
    assert second.name.startswith("corrected-2.")
    labels, geometry, _ = read_labels(first)
    np.testing.assert_array_equal(labels, new)
    assert geometry.matches(loaded.case.geometry)
    pf = read_prompts(folder / "corrected.prompts.json")
    sets = dict(start)
    sets[label] = start[label].add(Point(y, x, index=k, label=label))
    assert pf.sets == sets and pf.shape == ref.shape
    assert (folder / "corrected-2.prompts.json").exists()
    # another case takes the correction's layers, prompts and session away with this one
    _settle(panel, qtbot)
    other = next(i for i, r in enumerate(panel.visible_rows()) if r["case"] != loaded.case_id)
    panel.select_row(other)
    qtbot.waitUntil(
        lambda: panel.loaded.case_id != loaded.case_id and not panel.runner.running, timeout=60000
    )
    assert corrected not in viewer.layers
    assert panel.state.boxes is None and panel.state.points is None
    # the prompt layers go on the next turn of the event loop (PromptLayers.forget)
    qtbot.waitUntil(
        lambda: not any(ly.name in ("boxes", "points") for ly in viewer.layers), timeout=5000
    )
    assert prompt.jobs.session is None and prompt.tools.list.count() == 0
    assert panel.correction.findText("corrected") < 0
    _settle(panel, qtbot)


@pytest.mark.slow
def test_a_dense_run_is_corrected_from_boxes_of_the_reference(dense_run, make_napari_viewer, qtbot):
    from napari_segeval.prompts import boxes_from_labels

    viewer = make_napari_viewer()
    panel = _shown(viewer, qtbot, dense_run)
    prompt = panel.evaluate.prompt
    prompt.backend.setCurrentText("threshold (no weights)")
    panel.correct()
    ref = np.asarray(panel.loaded.case.labels)
    assert prompt.tools.prompts() == {
        b.label: PromptSet.from_box(b) for b in boxes_from_labels(ref)
    }
    note = prompt.tools.info.text()
    assert "boxes from the reference" in note and "builtin-ct is dense" in note
    _settle(panel, qtbot)


def test_correct_without_a_case_is_a_notification(make_napari_viewer, notifications):
    from napari_segeval._widgets.results.panel import ResultsPanel

    panel = ResultsPanel(make_napari_viewer())
    panel.correct_button.click()
    assert any(
        m.startswith("correction failed") and "select a row first" in m for m in notifications()
    )
