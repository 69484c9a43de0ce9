"""Mean-uncertainty identity, monotone scores, boundary bands, filtering exactly the top fraction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napari_segeval.uncertainty import (
    boundary_band,
    case_score,
    correlation,
    entropy_band_score,
    filter_most_uncertain,
    mean_uncertainty,
    n_removed,
    n_removed_quantile,
    scored_region,
    structure_scores,
)


def cube_labels(shape=(12, 16, 16)):
    lab = np.zeros(shape, np.uint8)
    lab[3:9, 4:12, 4:12] = 1
    lab[4:7, 13:15, 13:15] = 2
    return lab


def test_mean_uncertainty_equals_integral_of_volume_curve():
    rng = np.random.default_rng(0)
    u = rng.random((10, 12, 12)) ** 2
    region = scored_region(cube_labels((10, 12, 12))[:, :12, :12], band=1)
    n = 20001
    t = np.linspace(0.0, 1.0, n)  # F(t): the share of the region's voxels above t
    f = 1.0 - np.searchsorted(np.sort(u[region]), t, side="right") / u[region].size
    brute = np.array([(u[region] > x).mean() for x in t[::2000]])
    np.testing.assert_allclose(f[::2000], brute)
    integral = float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(t)))
    assert integral == pytest.approx(mean_uncertainty(u, region), abs=2.0 / n)
    assert mean_uncertainty(u, region) == pytest.approx(float(u[region].mean()))


def test_mean_uncertainty_clips_and_handles_empty_region():
    assert mean_uncertainty(np.array([-1.0, 2.0])) == 0.5
    assert math.isnan(mean_uncertainty(np.ones(3), np.zeros(3, bool)))


def test_boundary_band_of_a_cube():
    m = np.zeros((12, 12, 12), bool)
    m[3:9, 3:9, 3:9] = True
    band = boundary_band(m, 1)
    inner = np.zeros_like(m)
    inner[4:8, 4:8, 4:8] = True
    assert not (band & inner).any()  # the eroded core is not in the band
    assert band[3, 3, 3] and band[2, 5, 5] and not band[1, 5, 5] and not band[2, 2, 2]
    # 6-connected dilation of a 6^3 cube adds one 6x6 layer on each face (no edges)
    dil = scored_region(m.astype(np.uint8), 1, band=1)
    assert int(dil.sum()) == 6**3 + 6 * 36
    assert int(band.sum()) == int(dil.sum()) - 4**3
    assert boundary_band(np.zeros((4, 4), bool)).sum() == 0


def test_scores_monotone_in_constructed_example():
    lab = cube_labels()
    ring = boundary_band(lab == 1, 1)
    inside = (lab == 1) & ~ring
    previous = None
    for level in np.linspace(0.0, 1.0, 6):
        u = np.zeros(lab.shape)
        u[ring] = level
        u[inside] = level / 4
        rows = {r["label"]: r for r in structure_scores(u, lab, {1: "a", 2: "b"})}
        now = (case_score(u, lab), rows[1]["inside"], rows[1]["band"], rows[1]["score"])
        if previous is not None:
            assert all(b > a for a, b in zip(previous, now))
        previous = now
    # widening the uncertain shell around a fixed prediction raises the case score
    scores = []
    for width in range(4):
        u = boundary_band(lab > 0, width).astype(float) if width else np.zeros(lab.shape)
        scores.append(case_score(u, lab, band=3))
    assert scores == sorted(scores) and len(set(scores)) == 4


def test_structure_scores_rows():
    lab = cube_labels()
    u = np.where(lab == 2, 0.8, 0.1)
    rows = structure_scores(u, lab, {1: "liver", 2: "spleen", 3: "absent"}, band=0)
    by = {r["name"]: r for r in rows}
    assert by["liver"]["inside"] == pytest.approx(0.1) and by["spleen"]["inside"] == pytest.approx(
        0.8
    )
    assert by["liver"]["n_voxels"] == 6 * 8 * 8
    assert math.isnan(by["absent"]["score"]) and by["absent"]["n_voxels"] == 0
    assert [r["label"] for r in structure_scores(u, lab)] == [1, 2]
    with pytest.raises(ValueError, match="shape"):
        structure_scores(u[:-1], lab)


def test_case_score_without_prediction_scores_all_voxels():
    u = np.random.default_rng(3).random((4, 5, 6))
    assert case_score(u, np.zeros(u.shape, int)) == pytest.approx(u.mean())


def test_entropy_band_score_is_mean_entropy_over_structure_and_band():
    p = np.zeros((2, 6, 6))
    p[0] = 1.0
    lab = np.zeros((6, 6), int)
    lab[2:4, 2:4] = 1
    assert entropy_band_score(p, lab) == 0.0
    p[:, 2:4, 2:4] = 0.5
    assert entropy_band_score(p, lab) == pytest.approx(4 / 12)  # 4 of 12 region voxels at 1


@pytest.mark.parametrize(
    ("n", "fraction", "k"),
    [
        (20, 0.05, 1),
        (20, 0.10, 2),
        (10, 0.05, 1),
        (9, 0.05, 0),
        (19, 0.05, 1),
        (29, 0.05, 1),
        (30, 0.05, 2),
        (25, 0.10, 3),
        (24, 0.10, 2),
        (100, 0.05, 5),
        (5, 0.0, 0),
        (5, 1.0, 5),
    ],
)
def test_n_removed_rounds_half_up(n, fraction, k):
    assert n_removed(n, fraction) == k


def test_filter_removes_exactly_the_top_fraction():
    scores = {f"c{i:02d}": i / 20 for i in range(20)}
    kept, removed = filter_most_uncertain(scores, 0.10)
    assert removed == ["c19", "c18"]
    assert sorted(kept + removed) == sorted(scores) and not set(kept) & set(removed)
    kept, removed = filter_most_uncertain(scores, 0.05)
    assert removed == ["c19"] and len(kept) == 19
    with pytest.raises(ValueError):
        filter_most_uncertain(scores, 1.5)


def test_filter_ranks_nan_first_and_breaks_ties_by_id():
    kept, removed = filter_most_uncertain({"b": 0.5, "a": 0.5, "n": float("nan"), "z": 0.1}, 0.5)
    assert removed == ["n", "a"] and kept == ["b", "z"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=60), st.floats(0, 1))
def test_filter_property(values, fraction):
    scores = {f"c{i}": v for i, v in enumerate(values)}
    kept, removed = filter_most_uncertain(scores, fraction)
    assert len(removed) == math.floor(fraction * len(values) + 0.5 + 1e-9)
    assert len(kept) + len(removed) == len(values)
    if kept and removed:
        assert min(scores[c] for c in removed) >= max(scores[c] for c in kept)


@pytest.mark.parametrize(
    ("n", "fraction", "k"),
    [
        (20, 0.05, 1),
        (20, 0.10, 2),
        (10, 0.05, 0),
        (10, 0.10, 1),
        (19, 0.05, 0),
        (6, 0.10, 0),
        (4, 0.05, 0),
        (100, 0.05, 5),
        (5, 0.0, 0),
        (5, 1.0, 5),
        (60, 0.05, 3),
        (30, 0.10, 3),
    ],
)
def test_n_removed_quantile_is_n_minus_ceil(n, fraction, k):
    assert n_removed_quantile(n, fraction) == k
    scores = {f"c{i:03d}": i / n for i in range(n)}  # distinct scores
    kept, removed = filter_most_uncertain(scores, fraction, "quantile")
    assert len(removed) == k and len(kept) == n - k
    assert removed == [f"c{i:03d}" for i in range(n - 1, n - 1 - k, -1)]


def test_quantile_rule_keeps_ties_at_the_quantile_and_ranks_nan_highest():
    # 10 cases, 10%: the 0.9 quantile is the 9th smallest; the tie at it stays
    scores = {f"c{i}": v for i, v in enumerate([0.1] * 8 + [0.5, 0.5])}
    assert filter_most_uncertain(scores, 0.10, "quantile")[1] == []
    scores["c9"] = float("nan")  # NaN counts as the largest score
    assert filter_most_uncertain(scores, 0.10, "quantile")[1] == ["c9"]
    assert filter_most_uncertain(scores, 1.0, "quantile")[0] == []
    with pytest.raises(ValueError, match="rule"):
        filter_most_uncertain(scores, 0.1, "median")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=60), st.floats(0, 1))
def test_quantile_rule_matches_the_empirical_quantile(values, fraction):
    scores = {f"c{i}": v for i, v in enumerate(values)}
    kept, removed = filter_most_uncertain(scores, fraction, "quantile")
    ranked = sorted(values)
    m = len(values) - n_removed_quantile(len(values), fraction)
    # F^-1(1 - f) = inf{a : 1 - f <= F(a)} with the empirical CDF F(a) = #{v <= a} / n
    cdf = [sum(v <= a for v in values) / len(values) for a in ranked]
    quantile = min((a for a, c in zip(ranked, cdf) if 1 - fraction <= c + 1e-9), default=None)
    if m == 0:
        assert kept == []
    else:
        assert quantile == ranked[m - 1]
        assert sorted(kept) == sorted(c for c, v in scores.items() if v <= quantile)
    assert len(kept) + len(removed) == len(values)


def test_correlation():
    c = correlation([0.1, 0.2, 0.3, float("nan")], [0.9, 0.8, 0.7, 0.1])
    assert (
        c["n"] == 3 and c["pearson"] == pytest.approx(-1.0) and c["spearman"] == pytest.approx(-1.0)
    )
    assert math.isnan(correlation([1, 1, 1], [1, 2, 3])["pearson"])
