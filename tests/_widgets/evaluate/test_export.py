"""The Export panel: geometry kept, CSV rows, screenshot, no silent overwrite."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from qtpy.QtWidgets import QMessageBox, QPushButton

from napari_segeval._widgets.evaluate.dice import DicePanel
from napari_segeval._widgets.evaluate.export import ExportPanel
from napari_segeval.io import read_labels


@pytest.fixture
def panel(small_case, qtbot):
    viewer, state, pred = small_case
    dice = DicePanel(viewer, state)
    qtbot.addWidget(dice)
    state.set_prediction("clean", pred)
    export = ExportPanel(viewer, state, records=lambda: dice.records)
    qtbot.addWidget(export)
    return viewer, state, pred, export


def _answer(monkeypatch, answer):
    asked = []

    def question(*args, **kwargs):
        asked.append(args)
        return answer

    monkeypatch.setattr(QMessageBox, "question", question)
    return asked


def test_prediction_written_with_geometry(panel, tmp_path, monkeypatch):
    _viewer, _state, pred, export = panel
    asked = _answer(monkeypatch, QMessageBox.No)
    out = export.save_prediction(tmp_path / "pred.nii.gz", "clean")
    labels, geometry, _ = read_labels(out)
    np.testing.assert_array_equal(labels, pred.data)
    assert geometry.spacing == pytest.approx((2.0, 1.0, 1.0))
    assert not asked
    # exists: the person says no -> untouched
    pred.data[:] = 0
    assert export.save_prediction(out, "clean") is None
    assert len(asked) == 1
    assert read_labels(out)[0].any()
    _answer(monkeypatch, QMessageBox.Yes)
    export.save_prediction(out, "clean")
    assert not read_labels(out)[0].any()


def test_metrics_csv(panel, tmp_path, monkeypatch):
    _viewer, _state, _pred, export = panel
    _answer(monkeypatch, QMessageBox.No)
    path = export.save_metrics(tmp_path / "m.csv")
    rows = list(csv.DictReader(path.open()))
    assert [r["name"] for r in rows] == ["liver", "spleen"]
    assert float(rows[1]["dice"]) == pytest.approx(1.0)
    assert {"condition", "dice", "iou", "hd95", "nsd"} <= set(rows[0])


def test_bad_target_is_a_notification(panel, tmp_path, notifications, monkeypatch):
    from qtpy.QtWidgets import QFileDialog

    _viewer, _state, _pred, export = panel
    target = tmp_path / "missing-dir" / "pred.xyz"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    buttons = export.findChildren(QPushButton)
    next(b for b in buttons if b.text().startswith("Save prediction")).click()
    assert any("pred.xyz" in m for m in notifications())
    assert not target.exists()


def test_screenshot(panel, tmp_path, monkeypatch):
    _viewer, _state, _pred, export = panel
    asked = _answer(monkeypatch, QMessageBox.No)
    out = export.save_screenshot(tmp_path / "shot.png", canvas_only=True)
    assert out.stat().st_size > 0
    assert export.save_screenshot(out, canvas_only=True) is None
    assert len(asked) == 1
