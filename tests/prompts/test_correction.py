"""The simulated correction rule: worst slice, larger region, most interior pixel (known answers)."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval.prompts.box import Box
from napari_segeval.prompts.correction import (
    interior_pixel,
    most_wrong_slice,
    next_correction,
    slice_errors,
)
from napari_segeval.prompts.prompt_set import Point


def constructed():
    """A 6-slice structure; the prediction misses a 7 x 7 block on slice 4 (49 FN) and adds
    a 3 x 3 blob on slice 1 (9 FP) and a 30-pixel FP strip on slice 4's edge (so slice 4
    has 79 wrong pixels: FN 49 > FP 30)."""
    ref = np.zeros((6, 20, 24), bool)
    ref[1:5, 4:16, 4:20] = True
    pred = ref.copy()
    pred[4, 6:13, 8:15] = False  # FN block, rows 6..12, columns 8..14
    pred[1, 17:20, 0:3] = True  # 9 FP
    pred[4, 0:2, 0:15] = True  # 30 FP
    return ref, pred


def brute_force_depth(mask: np.ndarray) -> np.ndarray:
    """Distance of each mask pixel to the nearest pixel outside it (border counts as outside)."""
    padded = np.pad(mask, 1)
    out_y, out_x = np.nonzero(~padded)
    depth = np.zeros(mask.shape)
    for y, x in zip(*np.nonzero(mask)):
        depth[y, x] = np.sqrt(((out_y - (y + 1)) ** 2 + (out_x - (x + 1)) ** 2).min())
    return depth


def test_picks_the_known_slice_region_and_pixel():
    ref, pred = constructed()
    fn, fp = slice_errors(ref, pred)
    assert fn.tolist() == [0, 0, 0, 0, 49, 0] and fp.tolist() == [0, 9, 0, 0, 30, 0]
    c = next_correction(ref, pred, label=2)
    # 7 x 7 block: its centre (9, 11), 4 pixels from every side (the only such pixel)
    assert c.prompt == Point(9, 11, index=4, label=2, positive=True)
    assert (c.n_fn, c.n_fp, c.region, c.depth) == (49, 30, "fn", 4.0)


def test_negative_point_when_false_positives_dominate():
    ref, pred = constructed()
    pred[4] = ref[4]  # only the FP blob on slice 1 is left
    pred[1, 17:20, 0:3] = True
    c = next_correction(ref, pred)
    assert c.prompt == Point(18, 1, index=1, label=1, positive=False) and c.region == "fp"


def test_interior_pixel_matches_a_brute_force_distance_and_breaks_ties_row_major():
    rng = np.random.default_rng(3)
    for _ in range(5):
        m = rng.random((11, 13)) < 0.7
        y, x, d = interior_pixel(m)
        depth = brute_force_depth(m)
        assert d == pytest.approx(depth.max())
        first = np.argwhere(np.isclose(depth, depth.max()))[0]
        assert (y, x) == tuple(first)
    square = np.zeros((6, 6), bool)
    square[1:5, 1:5] = True  # four centre pixels tie at depth 2
    assert interior_pixel(square) == (2, 2, 2.0)


def test_ties_between_slices_and_between_fn_fp_are_deterministic():
    ref = np.zeros((4, 6, 6), bool)
    ref[:, 1:5, 1:5] = True
    pred = ref.copy()
    pred[1, 1:3, 1:5] = False  # 8 FN on slice 1
    pred[3, 1:3, 1:5] = False  # 8 FN on slice 3: tie, the lowest slice wins
    assert most_wrong_slice(ref, pred) == 1
    pred = ref.copy()
    pred[2, 1:3, 1:5] = False  # 8 FN
    pred[2, 5, 0:6] = True
    pred[2, 0, 0:2] = True  # 8 FP: equal counts, the FN (positive) wins
    c = next_correction(ref, pred)
    assert c.index == 2 and c.prompt.positive and c.region == "fn"
    assert next_correction(ref, pred) == c


def test_exact_prediction_needs_no_correction():
    ref, _ = constructed()
    assert next_correction(ref, ref.copy()) is None
    assert next_correction(ref, ref.copy(), kind="box") is None


def test_box_is_the_reference_box_on_the_worst_slice_not_yet_boxed():
    ref, pred = constructed()
    c = next_correction(ref, pred, label=5, kind="box")
    assert c.prompt == Box(4, 4, 16, 20, index=4, label=5)
    c = next_correction(ref, pred, label=5, kind="box", boxed=[4])
    assert c.prompt == Box(4, 4, 16, 20, index=1, label=5)  # slice 1: 9 FP, has reference
    # every wrong slice boxed already: the point rule
    c = next_correction(ref, pred, label=5, kind="box", boxed=[1, 4])
    assert isinstance(c.prompt, Point) and c.index == 4
    assert next_correction(ref, pred, kind="box", boxed=[1, 4], points=False) is None


def test_box_passes_over_slices_without_reference():
    ref = np.zeros((3, 8, 8), bool)
    ref[1, 2:6, 2:6] = True
    pred = ref.copy()
    pred[0, 0:4, 0:8] = True  # 32 FP where the structure is absent
    pred[1, 2:4, 2:6] = False  # 8 FN on its only slice
    assert next_correction(ref, pred, kind="box").prompt == Box(2, 2, 6, 6, index=1)
    assert next_correction(ref, pred).prompt.positive is False  # the point goes to slice 0


def test_bad_input_is_one_line():
    ref, pred = constructed()
    with pytest.raises(ValueError, match="kind must be one of point, box, got 'scribble'"):
        next_correction(ref, pred, kind="scribble")
    with pytest.raises(ValueError, match="one shape"):
        next_correction(ref, pred[:3])
    with pytest.raises(ValueError, match="non-empty"):
        interior_pixel(np.zeros((3, 3), bool))
