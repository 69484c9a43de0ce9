import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import ndimage

from napari_segeval._errors import GeometryMismatchError
from napari_segeval.metrics import _border_search as bs
from napari_segeval.metrics.surface import (
    surface_distances,
    surface_metrics,
    weighted_percentile,
)


def sphere(shape, centre, radius, spacing=(1.0, 1.0, 1.0)):
    grid = np.ogrid[tuple(slice(0, s) for s in shape)]
    return sum(((g - c) * s) ** 2 for g, c, s in zip(grid, centre, spacing)) <= radius**2


def slow_surface(ref, pred, spacing, tol):
    """Obvious reference: surfels by explicit 2x2x2 loops, distances by a full EDT."""
    from napari_segeval.metrics._surfel_tables import contour_length_table_2d, surfel_area_table_3d

    ndim = ref.ndim
    table = surfel_area_table_3d(spacing) if ndim == 3 else contour_length_table_2d(spacing)

    def codes(m):
        p = np.pad(m, 1)
        out = np.zeros(tuple(s + 1 for s in m.shape), int)
        for idx in np.ndindex(out.shape):
            code = 0
            for off in np.ndindex((2,) * ndim):
                bit = sum((1 - o) << (ndim - 1 - a) for a, o in enumerate(off))
                code |= int(p[tuple(i + o for i, o in zip(idx, off))]) << bit
            out[idx] = code
        return out

    cr, cp = codes(ref), codes(pred)
    full = 2 ** (2**ndim) - 1
    br, bp = (cr > 0) & (cr < full), (cp > 0) & (cp < full)
    dr = ndimage.distance_transform_edt(~br, sampling=spacing)
    dp = ndimage.distance_transform_edt(~bp, sampling=spacing)
    d_rp, a_r = dp[br], table[cr[br]]
    d_pr, a_p = dr[bp], table[cp[bp]]
    nsd = (a_r[d_rp <= tol].sum() + a_p[d_pr <= tol].sum()) / (a_r.sum() + a_p.sum())
    hd = max(d_rp.max(), d_pr.max())
    return nsd, hd


def test_shifted_cubes_known_answer():
    a = np.zeros((12, 12, 12), bool)
    a[3:7, 3:7, 3:7] = True
    b = np.roll(a, 3, axis=2)
    m = surface_metrics(a, b, (1, 1, 1), tolerance_mm=1.0)
    assert m["hd"] == 3.0 and m["hd95"] == 3.0
    assert 0 < m["nsd"] < 1 and 0 < m["assd"] < 3


def test_shift_along_coarse_axis_anisotropic():
    a = np.zeros((12, 12, 12), bool)
    a[3:7, 3:7, 3:7] = True
    b = np.roll(a, 2, axis=0)
    m = surface_metrics(a, b, (2.5, 0.7, 0.7), tolerance_mm=4.9)
    assert m["hd"] == pytest.approx(5.0)  # two slices of 2.5 mm
    assert m["nsd"] < 1
    assert surface_metrics(a, b, (2.5, 0.7, 0.7), tolerance_mm=5.0)["nsd"] == pytest.approx(1.0)


def test_identical_spheres():
    s = sphere((20, 20, 20), (10, 10, 10), 6)
    m = surface_metrics(s, s, (1, 1, 1))
    assert m == {"hd": 0.0, "hd95": 0.0, "assd": 0.0, "nsd": 1.0}


def test_concentric_spheres_hd():
    a = sphere((30, 30, 30), (15, 15, 15), 10)
    b = sphere((30, 30, 30), (15, 15, 15), 7)
    m = surface_metrics(a, b, (1, 1, 1), tolerance_mm=1.0)
    assert 2.5 <= m["hd95"] <= m["hd"] <= np.sqrt(13) + 1e-12
    assert m["nsd"] < 0.2


@pytest.mark.parametrize("empty,expected", [("one", (0.0, 1.0)), ("zero", (np.inf, 0.0))])
def test_both_empty(empty, expected):
    z = np.zeros((5, 5, 5), bool)
    m = surface_metrics(z, z, (1, 1, 1), empty=empty)
    assert (m["hd95"], m["nsd"]) == expected
    assert np.isnan(surface_metrics(z, z, (1, 1, 1), empty="nan")["nsd"])


def test_one_empty():
    z = np.zeros((5, 5, 5), bool)
    a = z.copy()
    a[2, 2, 2] = True
    for m in (surface_metrics(a, z, (1, 1, 1)), surface_metrics(z, a, (1, 1, 1))):
        assert m["hd"] == m["hd95"] == m["assd"] == np.inf and m["nsd"] == 0.0


def test_2d():
    a = np.zeros((10, 10), bool)
    a[2:6, 2:6] = True
    b = np.roll(a, 2, axis=1)
    m = surface_metrics(a, b, (1.0, 1.0), tolerance_mm=1.0)
    assert m["hd"] == 2.0
    nsd, _ = slow_surface(a, b, (1.0, 1.0), 1.0)
    assert m["nsd"] == pytest.approx(nsd, abs=1e-12)


def test_errors():
    with pytest.raises(GeometryMismatchError):
        surface_metrics(np.zeros((3, 3)), np.zeros((3, 4)), (1, 1))
    with pytest.raises(GeometryMismatchError):
        surface_metrics(np.zeros((3, 3)), np.zeros((3, 3)), (1, 1, 1))
    with pytest.raises(ValueError):
        surface_metrics(np.zeros((3, 3)), np.zeros((3, 3)), (1, 1), empty="x")


def test_weighted_percentile():
    d = np.array([0.0, 1.0, 5.0])
    ranks = np.arange(3)
    assert weighted_percentile(ranks, d, np.array([1.0, 1.0, 0.01]), 95) == 1.0
    assert weighted_percentile(ranks, d, np.array([1.0, 1.0, 1.0]), 95) == 5.0
    # surfels in any order: distances 5, 0, 1 have ranks 2, 0, 1
    assert weighted_percentile(np.array([2, 0, 1]), d, np.ones(3), 50) == 1.0
    assert weighted_percentile(np.zeros(0, np.int64), d, np.zeros(0), 95) == np.inf


def test_neighbour_codes_match_correlate():
    rng = np.random.default_rng(0)
    m = rng.random((5, 6, 7)) < 0.5
    kernel = np.array([[[128, 64], [32, 16]], [[8, 4], [2, 1]]])
    padded = np.zeros(tuple(s + 1 for s in m.shape), np.uint8)
    padded[:-1, :-1, :-1] = m
    expected = ndimage.correlate(padded.astype(np.int64), kernel, mode="constant", cval=0)
    np.testing.assert_array_equal(bs.padded_codes(m, (0,) * m.ndim), expected)


@settings(max_examples=25, deadline=None)
@given(
    arrays(bool, st.tuples(st.integers(1, 5), st.integers(1, 6), st.integers(1, 6))),
    st.data(),
    st.sampled_from([(1.0, 1.0, 1.0), (2.0, 0.5, 0.8)]),
)
def test_property_against_slow_reference(a, data, spacing):
    b = data.draw(arrays(bool, a.shape))
    if not a.any() or not b.any():
        return
    m = surface_metrics(a, b, spacing, tolerance_mm=1.0)
    nsd, hd = slow_surface(a, b, spacing, 1.0)
    assert m["nsd"] == pytest.approx(nsd, abs=1e-12)
    assert m["hd"] == pytest.approx(hd, abs=1e-12)


def _pair(spacing, shift):
    a = sphere((26, 40, 40), (13, 20, 20), 11, spacing)
    b = sphere((26, 40, 40), (13 + shift[0], 20 + shift[1], 20 + shift[2]), 9, spacing)
    b |= sphere((26, 40, 40), (8, 12, 28), 3, spacing)
    return a, b


@pytest.mark.parametrize("spacing", [(1.0, 1.0, 1.0), (1.5, 0.8, 0.8), (3.0, 0.6, 1.1)])
def test_equals_deepmind(deepmind, spacing):
    a, b = _pair(spacing, (1, 2, -1))
    d = deepmind.compute_surface_distances(a, b, spacing)
    m = surface_metrics(a, b, spacing, tolerance_mm=2.0)
    assert m["hd95"] == pytest.approx(deepmind.compute_robust_hausdorff(d, 95), abs=1e-6)
    assert m["nsd"] == pytest.approx(deepmind.compute_surface_dice_at_tolerance(d, 2.0), abs=1e-9)
    assert m["hd"] == pytest.approx(deepmind.compute_robust_hausdorff(d, 100), abs=1e-6)
    ours = surface_distances(a, b, spacing)
    np.testing.assert_allclose(ours["distances_ref_to_pred"], d["distances_gt_to_pred"], atol=1e-9)
    assert ours["areas_pred"].sum() == pytest.approx(d["surfel_areas_pred"].sum(), rel=1e-12)
    ad = deepmind.compute_average_surface_distance(d)
    pooled = (ad[0] * d["surfel_areas_gt"].sum() + ad[1] * d["surfel_areas_pred"].sum()) / (
        d["surfel_areas_gt"].sum() + d["surfel_areas_pred"].sum()
    )
    assert m["assd"] == pytest.approx(pooled, rel=1e-9)


def test_deepmind_2d(deepmind):
    a, b = _pair((1.2, 0.7, 0.7), (0, 2, 1))
    d = deepmind.compute_surface_distances(a[13], b[13], (0.7, 0.7))
    m = surface_metrics(a[13], b[13], (0.7, 0.7), tolerance_mm=1.0)
    assert m["nsd"] == pytest.approx(deepmind.compute_surface_dice_at_tolerance(d, 1.0), abs=1e-9)
    assert m["hd95"] == pytest.approx(deepmind.compute_robust_hausdorff(d, 95), abs=1e-6)


def test_close_to_monai_hd95():
    monai = pytest.importorskip("monai.metrics", reason="MONAI (bench extra) not installed")
    spacing = (1.0, 1.0, 1.0)
    a, b = _pair(spacing, (1, 2, -1))
    theirs = monai.compute_hausdorff_distance(
        b[None, None], a[None, None], percentile=95, spacing=spacing
    ).item()
    ours = surface_metrics(a, b, spacing)["hd95"]
    assert ours == pytest.approx(theirs, abs=1.5)  # close, not equal (see module docstring)
