"""The Dice panel: values equal the metrics core, live updates after paint strokes."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._widgets.evaluate.dice import DicePanel
from napari_segeval._widgets.overlays.arrays import FALSE_NEGATIVE, FALSE_POSITIVE
from napari_segeval.metrics import structure_table


def _dice(panel, label, header="Dice"):
    return float(panel.cell(label, header))


def test_table_equals_core(small_case, qtbot):
    viewer, state, pred = small_case
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    state.set_prediction("clean", pred)
    rows = structure_table(
        state.reference.data, pred.data, (2.0, 1.0, 1.0), structures=state.structures
    )
    for row in rows:
        assert _dice(panel, row["label"]) == pytest.approx(row["dice"], abs=5e-4)
        assert float(panel.cell(row["label"], "IoU")) == pytest.approx(row["iou"], abs=5e-4)
    # surface metrics arrive from the worker thread
    qtbot.waitUntil(lambda: panel.cell(1, "HD95 mm") not in ("...",), timeout=20000)
    assert float(panel.cell(1, "HD95 mm")) == pytest.approx(rows[0]["hd95"], abs=0.05)
    assert float(panel.cell(1, "NSD")) == pytest.approx(rows[0]["nsd"], abs=5e-4)


def test_paint_updates_dice(small_case, qtbot):
    viewer, state, pred = small_case
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    state.set_prediction("clean", pred)
    before = _dice(panel, 1)
    pred.brush_size = 5
    pred.paint((5, 15, 15), 0)  # erase a disc of liver on slice 5
    expected = structure_table(
        state.reference.data, pred.data, (2.0, 1.0, 1.0), structures=state.structures, surface=False
    )[0]["dice"]
    assert expected < before
    qtbot.waitUntil(lambda: abs(_dice(panel, 1) - expected) < 5e-4, timeout=5000)
    # a stroke on the reference updates too
    state.reference.paint((5, 15, 15), 0)
    expected = structure_table(
        state.reference.data, pred.data, (2.0, 1.0, 1.0), structures=state.structures, surface=False
    )[0]["dice"]
    qtbot.waitUntil(lambda: abs(_dice(panel, 1) - expected) < 5e-4, timeout=5000)


def test_worst_slice_is_the_results_panels_rule(small_case, qtbot):
    """Ties in Dice go to the slice with the most wrong voxels, as in the Results panel."""
    from napari_segeval.metrics import worst_slice

    viewer, state, pred = small_case
    pred.data[4] = 0  # the liver missed on slices 4 and 6: Dice 0 on both ...
    pred.data[6] = 0
    pred.data[6, 0:6, 0:6] = 1  # ... with more wrong voxels on 6 (a false positive too)
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    state.set_prediction("clean", pred)
    state.set_current(1)
    assert worst_slice(state.reference.data, pred.data, 1) == 6
    assert panel.go_to_worst() == 6  # the first minimum would be 4
    assert panel.current_slice() == 6
    state.set_current(9)  # a structure in neither map: no slice
    assert panel.go_to_worst() is None


def test_data_setitem_and_clean_vs_attacked(small_case, qtbot):
    viewer, state, pred = small_case
    attacked = viewer.add_labels(pred.data.copy(), name="attacked", scale=(2.0, 1.0, 1.0))
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    state.set_prediction("clean", pred)
    state.set_prediction("attacked", attacked)
    assert "ΔDice" in panel.headers()
    idx = np.nonzero(attacked.data == 1)
    attacked.data_setitem(tuple(i[:100] for i in idx), 0)
    expected = structure_table(
        state.reference.data,
        attacked.data,
        (2.0, 1.0, 1.0),
        structures=state.structures,
        surface=False,
    )[0]["dice"]
    qtbot.waitUntil(lambda: abs(_dice(panel, 1, "Dice att.") - expected) < 5e-4, timeout=5000)
    delta = float(panel.cell(1, "ΔDice"))
    assert delta == pytest.approx(expected - _dice(panel, 1, "Dice clean"), abs=2e-3)


def test_plot_worst_slice_and_overlay(small_case, qtbot):
    viewer, state, pred = small_case
    pred.data[7, 10:22, 8:20] = 0  # slice 7 misses the liver
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    state.set_prediction("clean", pred)
    state.set_current(1)
    assert panel.go_to_worst() == 7
    assert panel.current_slice() == 7
    panel.plot.resize(300, 120)
    panel.plot.slice_clicked.emit(4)
    assert panel.current_slice() == 4
    panel.overlay_box.setChecked(True)
    layer = panel.overlay.layer
    assert layer is not None and layer in viewer.layers
    assert layer.data[5, 20, 10] == FALSE_POSITIVE
    assert layer.data[5, 8, 10] == FALSE_NEGATIVE
    assert layer.data[7, 10, 10] == FALSE_NEGATIVE
    pred.paint((7, 10, 10), 1)  # painting updates the overlay on that slice
    qtbot.waitUntil(lambda: layer.data[7, 10, 10] == 0, timeout=5000)
    panel.overlay_box.setChecked(False)
    assert layer not in viewer.layers


def test_bad_prediction_shape_is_a_message(small_case, qtbot):
    viewer, state, _ = small_case
    wrong = viewer.add_labels(np.zeros((3, 4, 4), np.uint8), name="wrong")
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    state.set_prediction("clean", wrong)
    assert "differ in shape" in panel.message.text()
    assert panel.records == []
