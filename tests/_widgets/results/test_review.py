"""Reviewing a run in the Results panel: the worklist by risk, the flagged slices, the risk
curve, the review's progress kept in the folder, a folder without a reference or without
risks, and closing mid-review."""

from __future__ import annotations

import json
import math
import shutil
import threading

import numpy as np
import pytest
from qtpy.QtCore import Qt

from napari_segeval._widgets._state import current_index
from napari_segeval._widgets.results import panel as results_panel
from napari_segeval._widgets.results.review import MARK, SLICE_ROLE, UNMARK
from napari_segeval.evaluation.review import REVIEW_FILE
from napari_segeval.evaluation.triage import worklist
from napari_segeval.uncertainty.risk import Flag

from .test_panel import open_panel, show_row, worst_slice


def _listed(review) -> list[int]:
    """The slices the review box lists, in order."""
    return [review.flagged.item(i).data(SLICE_ROLE) for i in range(review.flagged.count())]


@pytest.fixture
def free_run(unlabelled_run, tmp_path):
    """A copy of the session's run without a reference (the tests write review.json)."""
    out = tmp_path / "free"
    shutil.copytree(unlabelled_run, out)
    return out


def _viewer_slice(panel) -> int:
    return current_index(panel.viewer, panel.layers.layers["image"])


def test_a_folder_without_reference_opens_riskiest_first_on_its_flagged_slice(
    free_run, make_napari_viewer, qtbot
):
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, free_run)
    keys = [c[0] for c in panel.model.columns]
    assert "risk" in keys and "dice" not in keys  # no Dice invented
    rows = panel.visible_rows()
    assert [r["risk"] for r in rows] == sorted((r["risk"] for r in rows), reverse=True)
    assert "no reference labels" in panel.summary.text()
    assert "reviewed 0 of 2 cases" in panel.summary.text()
    # the worklist of the command line (results.csv, slices.csv) is the table's order
    items = worklist(free_run)
    assert [(r["case"], r["structure"]) for r in rows] == [(w.case, w.structure) for w in items]
    show_row(panel, qtbot, 0)
    top = items[0]
    assert top.flagged and _viewer_slice(panel) == top.first_slice
    assert _listed(panel.review) == [f.slice for f in top.flagged]
    assert "Flagged slices of " + top.structure in panel.review.title.text()
    texts = [panel.review.flagged.item(i).text() for i in range(panel.review.flagged.count())]
    for f, text in zip(top.flagged, texts):
        assert all(flag.value in text for flag in f.flags)
    # the Dice tab: no reference, no table; the risk curve alone over the flagged slices
    dice = panel.evaluate.dice
    assert panel.layers.layers.get("reference") is None
    assert "no reference labels" in dice.message.text()
    assert dice.table.isHidden() and not dice.plot.series
    plot = dice.plot
    curve = {k: v for k, v in enumerate(plot.risk) if np.isfinite(v)}
    assert {f.slice: f.risk for f in top.flagged}.items() <= {
        k: pytest.approx(v) for k, v in curve.items()
    }.items()
    assert plot.y_title() == "risk" and plot.lo <= min(curve) and plot.hi >= max(curve)
    risk = panel.state.risk[panel.state.current]
    assert plot.stops == tuple(k for k, _ in risk.stops)


def test_a_click_on_a_flagged_slice_moves_the_view_there(free_run, make_napari_viewer, qtbot):
    viewer = make_napari_viewer(show=True)
    panel = open_panel(viewer, qtbot, free_run)
    show_row(panel, qtbot, 0)
    listed = _listed(panel.review)
    assert len(listed) >= 2
    for i in (1, 0):
        item = panel.review.flagged.item(i)
        rect = panel.review.flagged.visualItemRect(item)
        qtbot.mouseClick(
            panel.review.flagged.viewport(), Qt.MouseButton.LeftButton, pos=rect.center()
        )
        assert _viewer_slice(panel) == listed[i]
        assert panel.evaluate.dice.plot.current == listed[i]


def test_with_a_reference_the_risk_curve_is_beside_dice_and_the_case_opens_on_its_worst(
    risk_run, make_napari_viewer, qtbot
):
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, risk_run)
    rows = panel.visible_rows()
    assert [r["dice"] for r in rows] == sorted(r["dice"] for r in rows)  # worst Dice first
    assert {"dice", "risk"} <= {c[0] for c in panel.model.columns}
    assert "no reference" not in panel.summary.text() and "no risk" not in panel.summary.text()
    riskiest = worklist(risk_run)[0]
    k = next(i for i, r in enumerate(rows) if r["structure"] == riskiest.structure)
    show_row(panel, qtbot, k)
    ref = panel.layers.layers["reference"].data
    worst = worst_slice(ref, panel.layers.layers["clean"].data, rows[k]["label"])
    assert riskiest.first_slice != worst  # so the test tells the two rules apart
    assert _viewer_slice(panel) == worst  # a measured failure beats an estimated one
    plot = panel.evaluate.dice.plot
    assert set(plot.series) == {"clean"} and plot.y_title() == "Dice, risk"
    assert np.isfinite(plot.risk).sum() == len(panel.state.risk[rows[k]["label"]].slices)
    assert plot.stops  # the tumour's chain stopped on the model's confidence: marked
    assert all(Flag.STOPPED in s.flags for s in panel.state.risk[rows[k]["label"]].slices
               if s.slice in plot.stops)  # fmt: skip
    assert not panel.evaluate.dice.table.isHidden()


def test_an_older_folder_without_risk_opens_and_says_so(
    risk_run, make_napari_viewer, qtbot, tmp_path
):
    old = tmp_path / "old"
    shutil.copytree(risk_run, old)
    for path in (old / "cases").glob("*.json"):
        record = json.loads(path.read_text())
        for row in record.get("rows", []):
            row.pop("risk", None)
        record.pop("slices", None)
        path.write_text(json.dumps(record))
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, old)
    assert panel.folder is not None and "no risk" in panel.summary.text()
    assert "risk" not in [c[0] for c in panel.model.columns]
    show_row(panel, qtbot, 0)
    row = panel.visible_rows()[0]
    roles = panel.layers.layers
    # no risk, a reference: the worst slice by Dice, as before
    assert _viewer_slice(panel) == worst_slice(
        roles["reference"].data, roles["clean"].data, row["label"]
    )
    assert panel.state.risk == {} and len(panel.evaluate.dice.plot.risk) == 0
    assert "no risk estimates" in panel.review.title.text()
    assert panel.review.mark_button.isEnabled()  # a review works without risks too


def test_mark_reviewed_is_kept_in_the_folder_across_viewers(free_run, make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, free_run)
    show_row(panel, qtbot, 0)
    case = panel.loaded.case_id
    assert panel.review.mark_button.text() == MARK
    qtbot.mouseClick(panel.review.mark_button, Qt.MouseButton.LeftButton)
    saved = json.loads((free_run / REVIEW_FILE).read_text())
    assert list(saved["reviewed"]) == [case]
    assert panel.review.mark_button.text() == UNMARK and panel.review.mark_button.isChecked()
    col = panel.model.column("reviewed")
    shown = {
        (panel.proxy.row(i)["case"], panel.proxy.index(i, col).data())
        for i in range(panel.proxy.rowCount())
    }
    assert shown == {(case, "✓"), (next(c for c in panel.folder.cases() if c != case), "")}
    assert "reviewed 1 of 2 cases" in panel.summary.text()
    viewer.close()
    # napari closed and opened again: the folder shows what is done
    again = open_panel(make_napari_viewer(), qtbot, free_run)
    assert {r["case"] for r in again.visible_rows() if r["reviewed"]} == {case}
    assert "reviewed 1 of 2 cases" in again.summary.text()
    k = next(i for i, r in enumerate(again.visible_rows()) if r["case"] == case)
    show_row(again, qtbot, k)
    assert again.review.mark_button.isChecked()
    qtbot.mouseClick(again.review.mark_button, Qt.MouseButton.LeftButton)  # undo
    assert json.loads((free_run / REVIEW_FILE).read_text())["reviewed"] == {}
    assert "reviewed 0 of 2 cases" in again.summary.text()


def test_an_unreadable_review_is_named_and_left_alone(
    free_run, make_napari_viewer, qtbot, notifications
):
    (free_run / REVIEW_FILE).write_text("{broken")
    panel = open_panel(make_napari_viewer(), qtbot, free_run)
    assert any(REVIEW_FILE in m and "cannot read JSON" in m for m in notifications())
    show_row(panel, qtbot, 0)
    assert not panel.review.mark_button.isEnabled()
    assert (free_run / REVIEW_FILE).read_text() == "{broken"


@pytest.mark.parametrize("closing", ["panel", "napari"])
def test_closing_mid_review_cancels_the_load_and_keeps_what_was_saved(
    closing, free_run, make_napari_viewer, qtbot, monkeypatch, notifications
):
    from napari_segeval._cancel import check_cancel
    from napari_segeval.io import read_labels

    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, free_run)
    show_row(panel, qtbot, 0)
    case = panel.loaded.case_id
    panel.review.mark(case)
    layer = panel.layers.layers["clean"]
    layer.paint((_viewer_slice(panel), 40, 40), 3)  # a correction painted on the flagged slice
    panel.correction.setCurrentText("clean")
    saved = panel.save_correction()
    assert saved.parent == free_run / "corrections" / case
    assert panel.save_correction().name == "clean-2.nii.gz"  # never over the first
    prediction = free_run / panel.folder.records[case]["files"]["clean"]
    before = read_labels(prediction)[0]
    # the next case's load is held in its worker until it is cancelled
    started, stopped = threading.Event(), threading.Event()

    def held(folder, row, shown, progress=None, cancel=None):
        started.set()
        try:
            while True:
                check_cancel(cancel, "loading")
                threading.Event().wait(0.01)
        finally:
            stopped.set()

    monkeypatch.setattr(results_panel, "row_job", held)
    other = next(i for i, r in enumerate(panel.visible_rows()) if r["case"] != case)
    panel.select_row(other)
    assert started.wait(30) and panel.runner.running
    if closing == "panel":
        panel.close()
    else:
        viewer.close()
    assert stopped.wait(30)  # the worker ended: cancelled
    if closing == "panel":  # (with napari closed the runner's widgets are gone)
        qtbot.waitUntil(lambda: not panel.runner.running, timeout=30000)
    qtbot.wait(50)
    assert panel.loaded.case_id == case  # nothing of the cancelled load was shown
    assert not any("failed" in m for m in notifications())
    if closing == "panel":
        viewer.close()
    # what was saved before the close is all there, the prediction untouched
    assert list(json.loads((free_run / REVIEW_FILE).read_text())["reviewed"]) == [case]
    assert saved.is_file() and math.isclose(read_labels(saved)[0].sum(), layer.data.sum())
    np.testing.assert_array_equal(read_labels(prediction)[0], before)
    again = open_panel(make_napari_viewer(), qtbot, free_run)
    assert {r["case"] for r in again.visible_rows() if r["reviewed"]} == {case}
