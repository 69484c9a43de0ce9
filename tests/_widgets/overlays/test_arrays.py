"""Pure helpers behind the viewer panels."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from napari_segeval._widgets.overlays.arrays import (
    FALSE_NEGATIVE,
    FALSE_POSITIVE,
    compare_rows,
    dice_colour,
    error_overlay,
    focus_slice,
    touched_slices,
)
from napari_segeval.metrics import structure_table


def _pair():
    ref = np.zeros((6, 10, 10), np.uint8)
    ref[1:5, 2:7, 2:7] = 1
    ref[2:4, 8:, 8:] = 2
    pred = np.zeros_like(ref)
    pred[1:5, 3:8, 2:7] = 1
    return ref, pred


def test_error_overlay_counts_match_confusion():
    ref, pred = _pair()
    out = error_overlay(ref, pred, 1)
    row = structure_table(ref, pred, (1, 1, 1), structures={1: "a"}, surface=False)[0]
    tp = int(((ref == 1) & (pred == 1)).sum())
    fp, fn = int((out == FALSE_POSITIVE).sum()), int((out == FALSE_NEGATIVE).sum())
    assert row["dice"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert not out[ref == 2].any()
    assert error_overlay(ref, pred, 2)[2, 9, 9] == FALSE_NEGATIVE


def test_error_overlay_region_update_equals_full():
    ref, pred = _pair()
    out = error_overlay(ref, pred, 1)
    pred[3, :, :] = 1
    error_overlay(ref, pred, 1, region=slice(3, 4), out=out)
    np.testing.assert_array_equal(out, error_overlay(ref, pred, 1))
    with pytest.raises(ValueError):
        error_overlay(ref, pred, 1, region=slice(0, 1))
    with pytest.raises(ValueError):
        error_overlay(ref, pred[:2], 1)


class _Atom:
    def __init__(self, *key):
        self.slice_key = key


def test_touched_slices_forms():
    assert touched_slices([_Atom(slice(3, 4), slice(0, 5))], 10) == slice(3, 4)
    fancy = ((np.array([8, 2, 5]), np.array([0, 0, 0])), np.zeros(3), 1)
    assert touched_slices([fancy, _Atom(slice(0, 1))], 10) == slice(0, 9)
    assert touched_slices([((slice(None), slice(None)), 0, 1)], 10) is None
    assert touched_slices([object()], 10) is None
    assert touched_slices([_Atom(slice(7, 30))], 10) == slice(7, 10)
    assert touched_slices([((np.array([], int),), np.zeros(0), 1)], 10) == slice(0, 0)


def test_touched_slices_from_napari_paint():
    import napari

    layer = napari.layers.Labels(np.zeros((8, 16, 16), np.uint8))
    seen = []
    layer.events.paint.connect(lambda e: seen.append(touched_slices(e.value, 8)))
    layer.brush_size = 3
    layer.paint((5, 8, 8), 1)
    layer.data_setitem((np.array([1, 2]), np.array([0, 0]), np.array([0, 1])), 2)
    assert seen == [slice(5, 6), slice(1, 3)]


def test_focus():
    ref, _ = _pair()
    assert focus_slice(ref, 2, 6) == 2
    assert focus_slice(ref, 9, 6) == 3


def test_compare_rows_and_surface_fill():
    clean = [{"label": 1, "name": "a", "dice": 0.8, "hd95": float("nan")}]
    att = [{"label": 1, "name": "a", "dice": 0.5}]
    surf = {"clean": [{"label": 1, "hd95": 3.0}], "attacked": None}
    rec = compare_rows(clean, att, surface=surf, keys=["dice", "hd95"])[0]
    assert rec["clean"] == {"dice": 0.8, "hd95": 3.0}
    assert rec["delta"]["dice"] == pytest.approx(-0.3)
    assert np.isnan(rec["attacked"]["hd95"])
    only = compare_rows(clean, keys=["dice"])[0]
    assert only["attacked"] is None and only["delta"] is None


def test_dice_colour_monotone_green():
    greens = [dice_colour(v)[1] - dice_colour(v)[0] for v in np.linspace(0, 1, 11)]
    assert all(b >= a for a, b in itertools.pairwise(greens))
    assert dice_colour(-1) == dice_colour(0) and dice_colour(2) == dice_colour(1)


def test_overlays_import_without_gui():
    """The helpers sit beside the widgets but load no Qt, napari or magicgui."""
    code = (
        "import sys, napari_segeval._widgets.overlays.arrays; "
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "napari_segeval" in loaded
    gui = {"qtpy", "PyQt5", "PyQt6", "PySide2", "PySide6", "napari", "magicgui", "vispy"}
    assert not loaded & gui, f"importing overlays loaded {sorted(loaded & gui)}"
