import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import ndimage

from napari_segeval.metrics import _border_search as bs
from napari_segeval.metrics.surface import (
    surface_distances,
    surface_metrics,
    weighted_percentile,
)

SPACINGS = [(1.0, 1.0, 1.0), (1.5, 0.8, 0.8), (3.0, 0.6, 1.1), (5.0, 0.3, 0.35)]


def brute_force(index_a, index_b, shape, spacing):
    """Minimum over every point of b, with the same floating-point formula."""
    pa = np.stack(np.unravel_index(index_a, shape), -1)
    pb = np.stack(np.unravel_index(index_b, shape), -1)
    delta = (pb[None, :, :] - pa[:, None, :]).reshape(-1, len(shape))
    return bs.distance(delta, np.asarray(spacing)).reshape(len(pa), len(pb)).min(axis=1)


def random_borders(rng, shape, pad, density_a, density_b):
    inner = tuple(slice(p, s - p) for s, p in zip(shape, pad))
    grids = []
    for density in (density_a, density_b):
        g = np.zeros(shape, bool)
        g[inner] = rng.random(g[inner].shape) < density
        grids.append(g)
    return grids


@pytest.mark.parametrize("spacing", SPACINGS)
@pytest.mark.parametrize("density_b", [0.3, 0.01, 0.0005])
def test_banded_search_equals_brute_force(spacing, density_b):
    rng = np.random.default_rng(int(density_b * 1e4))
    sp = np.array(spacing)
    pad = bs.window(sp)
    shape = tuple(2 * p + n for p, n in zip(pad, (14, 20, 18)))
    ga, gb = random_borders(rng, shape, pad, 0.05, density_b)
    gb[pad[0] + 1, pad[1] + 1, pad[2] + 1] = True  # at least one point
    ia, ib = np.flatnonzero(ga), np.flatnonzero(gb)
    dist, rank, values = bs.nearest(ia, gb, ib, sp, pad)
    np.testing.assert_array_equal(dist, brute_force(ia, ib, shape, sp))
    np.testing.assert_array_equal(values[rank], dist)
    assert np.all(np.diff(values) >= 0)


def test_tree_fallback_equals_banded_search(monkeypatch):
    rng = np.random.default_rng(3)
    sp = np.array([1.5, 0.8, 0.8])
    pad = bs.window(sp)
    shape = tuple(2 * p + 16 for p in pad)
    ga, gb = random_borders(rng, shape, pad, 0.05, 0.05)
    ia, ib = np.flatnonzero(ga), np.flatnonzero(gb)
    banded = bs.nearest(ia, gb, ib, sp, pad)[0]
    monkeypatch.setattr(bs, "_TREE_BUILD", 0)
    monkeypatch.setattr(bs, "_TREE_QUERY", 0)
    dist, rank, values = bs.nearest(ia, gb, ib, sp, pad)
    np.testing.assert_array_equal(dist, banded)
    np.testing.assert_array_equal(values[rank], dist)
    assert np.all(np.diff(values) >= 0)
    assert rank.max() >= 1  # the tree answered points after the first offset


@pytest.mark.parametrize("ndim", [2, 3])
def test_padded_codes_and_border(ndim):
    rng = np.random.default_rng(ndim)
    m = rng.random((5, 6, 7)[:ndim]) < 0.5
    pad = (2, 0, 3)[:ndim]
    codes = bs.padded_codes(m, pad)
    inner = tuple(slice(p, p + s + 1) for s, p in zip(m.shape, pad))
    np.testing.assert_array_equal(codes[inner], bs.padded_codes(m, (0,) * m.ndim))
    assert codes.sum() == codes[inner].sum()
    grid, idx = bs.border(codes)
    full = 255 if ndim == 3 else 15
    np.testing.assert_array_equal(grid, (codes != 0) & (codes != full))
    np.testing.assert_array_equal(idx, np.flatnonzero(grid))


def sorted_rule(distances, areas, percent):
    """DeepMind's robust Hausdorff, written out: sort, cumulative area fraction, first >= p."""
    order = np.lexsort((areas, distances))
    d, a = distances[order], areas[order]
    cumulative = np.cumsum(a) / np.sum(a)
    hit = np.flatnonzero(cumulative >= percent / 100.0)
    return float(d[hit[0]] if hit.size else d[-1])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=40), st.data())
def test_weighted_percentile_equals_sorted_rule(distances, data):
    d = np.round(np.array(distances), 1)
    areas = np.array(data.draw(st.lists(st.floats(0.01, 5.0), min_size=d.size, max_size=d.size)))
    percent = data.draw(st.sampled_from([0.0, 50.0, 95.0, 100.0]))
    expected = sorted_rule(d, areas, percent)
    values, rank = np.unique(d, return_inverse=True)
    assert weighted_percentile(rank, values, areas, percent) == expected
    # ties split over several ranks (as the banded search may give them)
    order = np.argsort(d, kind="stable")
    split = np.empty(d.size, np.int64)
    split[order] = np.arange(d.size)
    assert weighted_percentile(split, d[order], areas, percent) == expected


def _spheres(shape, spacing, centres, radii):
    grid = np.ogrid[tuple(slice(0, s) for s in shape)]
    out = np.zeros(shape, bool)
    for c, r in zip(centres, radii):
        out |= sum(((g - ci) * s) ** 2 for g, ci, s in zip(grid, c, spacing)) <= r**2
    return out


@pytest.mark.parametrize("spacing", SPACINGS)
def test_far_apart_masks_match_distance_transform(spacing):
    """Distances far beyond the search window: the k-d tree part, against a full EDT."""
    shape = (20, 60, 60)
    a = _spheres(shape, spacing, [(10, 12, 12)], [5.0])
    b = _spheres(shape, spacing, [(10, 45, 48), (6, 12, 14)], [6.0, 2.0])
    d = surface_distances(a, b, spacing)
    codes = bs.padded_codes(b, (0, 0, 0))
    border_b = (codes != 0) & (codes != 255)
    edt = ndimage.distance_transform_edt(~border_b, sampling=spacing)
    codes_a = bs.padded_codes(a, (0, 0, 0))
    expected = np.sort(edt[(codes_a != 0) & (codes_a != 255)])
    np.testing.assert_array_equal(d["distances_ref_to_pred"], expected)
    reach = min((p + 1) * s for p, s in zip(bs.window(np.array(spacing)), spacing))
    assert d["distances_ref_to_pred"][-1] > reach  # beyond the search window


@pytest.mark.parametrize("spacing", SPACINGS)
def test_ranked_metrics_equal_definitions_on_sorted_distances(spacing):
    rng = np.random.default_rng(7)
    a, b = (ndimage.gaussian_filter(rng.random((16, 30, 30)), 2) > 0.5 for _ in range(2))
    assert a.any() and b.any() and not a.all() and not b.all()
    d = surface_distances(a, b, spacing)
    d_rp, a_r = d["distances_ref_to_pred"], d["areas_ref"]
    d_pr, a_p = d["distances_pred_to_ref"], d["areas_pred"]
    total = a_r.sum() + a_p.sum()
    for tol in (0.5, 1.6, 3.0):
        m = surface_metrics(a, b, spacing, tolerance_mm=tol, percentile=95)
        assert m["hd"] == max(d_rp[-1], d_pr[-1])
        assert m["hd95"] == max(sorted_rule(d_rp, a_r, 95), sorted_rule(d_pr, a_p, 95))
        nsd = (a_r[d_rp <= tol].sum() + a_p[d_pr <= tol].sum()) / total
        assert m["nsd"] == pytest.approx(nsd, abs=1e-12)
        assert m["assd"] == pytest.approx((d_rp @ a_r + d_pr @ a_p) / total, rel=1e-12)
