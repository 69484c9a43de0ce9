"""The AUV of Li et al. (2026) on constructed matrices: entropy extremes, invariances, numerics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napari_segeval.uncertainty import auv as A


def test_one_dominant_direction_has_low_entropy():
    rng = np.random.default_rng(0)
    m = np.outer(rng.normal(size=500), rng.normal(size=12))
    assert A.semantic_scale(m) == pytest.approx(0.0, abs=1e-9)
    noisy = m + 1e-3 * rng.normal(size=m.shape)
    assert A.semantic_scale(noisy) < 0.01


def test_isotropic_energy_has_the_maximal_entropy_log_d():
    rng = np.random.default_rng(1)
    q, _ = np.linalg.qr(rng.normal(size=(300, 7)))  # orthonormal columns: all s_j = 1
    p = A.energy(3.0 * q)
    h = float(-(p * np.log(p)).sum())
    assert h == pytest.approx(math.log(7), rel=1e-12)
    assert A.semantic_scale(3.0 * q) == pytest.approx(1.0, abs=1e-12)
    # random Gaussian rows: nearly isotropic, so close to the maximum
    assert A.semantic_scale(rng.normal(size=(20000, 8))) > 0.99


def test_entropy_grows_as_energy_spreads():
    scales = [A.semantic_scale(np.diag([1.0, a, a, a])) for a in (0.01, 0.1, 0.5, 1.0)]
    assert scales == sorted(scales) and scales[-1] == pytest.approx(1.0)


def test_invariant_to_row_and_column_order_and_transpose():
    rng = np.random.default_rng(2)
    m = rng.normal(size=(40, 9)) * np.linspace(0.1, 3, 9)
    s = A.semantic_scale(m)
    assert A.semantic_scale(m[rng.permutation(40)]) == pytest.approx(s, abs=1e-12)
    assert A.semantic_scale(m[:, rng.permutation(9)]) == pytest.approx(s, abs=1e-12)
    assert A.semantic_scale(m.T) == pytest.approx(s, abs=1e-12)
    assert A.semantic_scale(-m) == pytest.approx(s, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30), st.integers(2, 12), st.integers(0, 10_000))
def test_gram_eigenvalues_match_numpy_svd(n, d, seed):
    m = np.random.default_rng(seed).normal(size=(n, d))
    s = np.linalg.svd(m, compute_uv=False)
    np.testing.assert_allclose(np.sqrt(A.gram_eigenvalues(m)), s, rtol=1e-6, atol=1e-9)


def test_block_accumulation_equals_one_block(monkeypatch):
    rng = np.random.default_rng(3)
    m = rng.normal(size=(6, 5000)).astype(np.float32)
    whole = A.gram_eigenvalues(m)
    monkeypatch.setattr(A, "BLOCK_VALUES", 60)  # 10 columns per block
    np.testing.assert_allclose(A.gram_eigenvalues(m), whole, rtol=1e-10)
    np.testing.assert_allclose(A.gram_eigenvalues(m.T), whole, rtol=1e-10)


def test_a_million_pixels_in_float32_give_exact_singular_values():
    # four columns with disjoint supports: orthogonal, s_j = scale_j * sqrt(rows per block)
    n, scales = 1_000_000, np.array([4.0, 3.0, 2.0, 1.0])
    m = np.zeros((n, 4), np.float32)
    for j, s in enumerate(scales):
        m[j * n // 4 : (j + 1) * n // 4, j] = s
    lam = A.gram_eigenvalues(m)
    np.testing.assert_allclose(lam, scales**2 * (n / 4), rtol=1e-12)
    p = scales**2 / (scales**2).sum()
    expected = float(-(p * np.log(p)).sum() / math.log(4))
    assert A.semantic_scale(m) == pytest.approx(expected, rel=1e-12)


def test_fewer_than_two_rows_or_a_zero_matrix_has_no_scale():
    assert math.isnan(A.semantic_scale(np.ones((1, 50))))
    assert math.isnan(A.semantic_scale(np.ones((50, 1))))
    assert math.isnan(A.semantic_scale(np.zeros((5, 5))))
    assert math.isnan(A.semantic_scale(np.zeros((0, 3))))
    with pytest.raises(ValueError, match="NaN or infinite"):
        A.semantic_scale(np.array([[1.0, np.inf], [0.0, 1.0]]))


def test_energy_power_one_is_the_released_code():
    p2, p1 = A.energy(np.diag([3.0, 1.0])), A.energy(np.diag([3.0, 1.0]), power=1)
    np.testing.assert_allclose(p2, [0.9, 0.1])
    np.testing.assert_allclose(p1, [0.75, 0.25])


def test_class_matrix_layouts():
    a = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    np.testing.assert_array_equal(A.class_matrix(a), a.reshape(2, 12))
    np.testing.assert_array_equal(A.class_matrix(a, "H_DW")[1], a[:, 1, :].ravel())
    np.testing.assert_array_equal(A.class_matrix(a, "W_DH")[3], a[:, :, 3].ravel())
    with pytest.raises(ValueError, match="layout"):
        A.class_matrix(a, "DHW")
    with pytest.raises(ValueError, match="2D or 3D"):
        A.class_matrix(np.zeros(4))


def test_normalization_over_the_data_set():
    scales = {"rich": 2.0, "mid": 1.0, "poor": 0.5, "none": float("nan"), "zero": 0.0}
    auv = A.normalize(scales)
    assert auv["rich"] == 0.0 and auv["poor"] == 1.0
    assert auv["mid"] == pytest.approx(0.5)  # log scale: log 1 is half way from log 0.5 to log 2
    assert math.isnan(auv["none"]) and math.isnan(auv["zero"])
    assert A.normalize({"a": 0.7, "b": 0.7}) == {"a": 0.0, "b": 0.0}
    assert math.isnan(A.normalize({"a": float("nan")})["a"])


def test_auv_table_sums_or_averages_classes():
    scales = {
        "a": {"liver": 0.4, "tumour": 0.4},
        "b": {"liver": 0.5, "tumour": float("nan")},
        "c": {"liver": 0.2, "tumour": 0.3},
    }
    t = A.auv_table(scales)
    assert t["cases"]["a"]["scale"] == pytest.approx(0.8) and t["cases"]["b"]["n_classes"] == 1
    # sum: b lost its tumour and looks as poor as c; mean: b is the richest
    assert t["cases"]["a"]["auv"] == 0.0 and t["cases"]["b"]["auv"] == pytest.approx(
        1 - (math.log(0.5) - math.log(0.5)) / (math.log(0.8) - math.log(0.5))
    )
    m = A.auv_table(scales, "mean")
    assert m["cases"]["b"]["auv"] == 0.0 and m["cases"]["c"]["auv"] == 1.0
    assert t["classes"]["c"]["liver"]["auv"] == 1.0 and math.isnan(
        t["classes"]["b"]["tumour"]["auv"]
    )
    with pytest.raises(ValueError, match="aggregate"):
        A.sample_scale([1.0], "max")
