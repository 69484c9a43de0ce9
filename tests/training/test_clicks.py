"""Corrective clicks: the larger error region, its most interior pixel, known answers."""

import numpy as np
import pytest

from napari_segeval.prompts import next_correction
from napari_segeval.prompts.correction import error_regions
from napari_segeval.training.clicks import corrective_click, interior_point


def _disk(h, w, cy, cx, r):
    yy, xx = np.mgrid[0:h, 0:w]
    return (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r


def test_missed_region_gets_a_positive_click_at_its_centre():
    ref = _disk(40, 40, 20, 20, 10)
    pred = ref & ~_disk(40, 40, 20, 26, 5)  # a bite missing on the right
    y, x, positive = corrective_click(ref, pred)
    assert positive and ref[y, x] and not pred[y, x]
    assert y == 20 and 24 <= x <= 27


def test_leak_gets_a_negative_click():
    ref = _disk(40, 40, 20, 12, 6)
    pred = ref | _disk(40, 40, 20, 28, 8)  # a larger blob leaked next to it
    y, x, positive = corrective_click(ref, pred)
    assert not positive and (y, x) == (20, 28)


def test_the_reference_comes_first():
    """``(reference, prediction)`` as in metrics and prompts: swapped, the leak would read
    as a missed region and get a positive click."""
    ref = _disk(40, 40, 20, 12, 6)
    pred = ref | _disk(40, 40, 20, 28, 8)
    assert corrective_click(ref, pred)[2] is False
    assert corrective_click(pred, ref)[2] is True
    fn, fp = error_regions(ref, pred)
    assert fn.sum() == 0 and fp.sum() > 0


@pytest.mark.parametrize("seed", range(12))
def test_the_deterministic_click_is_the_evaluations(seed):
    """Without ``rng`` the training click is the interactive protocol's on one slice."""
    rng = np.random.default_rng(seed)
    ref = _disk(24, 24, *rng.integers(6, 18, 2), int(rng.integers(3, 8)))
    pred = _disk(24, 24, *rng.integers(6, 18, 2), int(rng.integers(3, 8)))
    if seed % 3 == 0:
        pred = ref & ~_disk(24, 24, *rng.integers(6, 18, 2), 3)
    found = next_correction(ref[None], pred[None])
    click = corrective_click(ref, pred)
    if found is None:
        assert click is None
    else:
        p = found.prompt
        assert click == (int(p.y), int(p.x), p.positive)


def test_larger_region_wins_and_exact_masks_need_no_click():
    ref = np.zeros((20, 20), bool)
    ref[5:15, 5:15] = True
    pred = ref.copy()
    pred[5:15, 5:7] = False  # 20 pixels missed
    pred[0:2, 0:15] = True  # 30 pixels leaked
    assert corrective_click(ref, pred)[2] is False
    assert corrective_click(ref, ref) is None
    fn, fp = error_regions(ref, pred)
    assert fn.sum() == 20 and fp.sum() == 30


def test_image_border_counts_as_boundary():
    region = np.zeros((10, 30), bool)
    region[:, :20] = True  # touches the top, bottom and left borders
    assert interior_point(region) == (4, 4)  # 5 px from the top and the left edge


def test_random_interior_points_stay_deep():
    region = _disk(60, 60, 30, 30, 20)
    rng = np.random.default_rng(0)
    pts = [interior_point(region, rng) for _ in range(50)]
    assert len(set(pts)) > 10
    assert all((y - 30) ** 2 + (x - 30) ** 2 <= 11**2 for y, x in pts)


def test_random_click_can_take_the_smaller_region():
    ref = np.zeros((20, 20), bool)
    ref[5:15, 5:15] = True
    pred = ref.copy()
    pred[5:15, 5:8] = False
    pred[0:2, 0:10] = True
    rng = np.random.default_rng(1)
    signs = {corrective_click(ref, pred, rng, other=0.5)[2] for _ in range(40)}
    assert signs == {True, False}
    assert {corrective_click(ref, pred, rng)[2] for _ in range(10)} == {True}
