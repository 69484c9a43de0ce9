"""Entropy of known probability maps and the running sample statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from napari_segeval.uncertainty import SampleStats, binary_entropy, entropy


def test_entropy_of_known_maps():
    k = 5
    uniform = np.full((k, 3, 4), 1.0 / k)
    onehot = np.zeros((k, 3, 4))
    onehot[2] = 1.0
    np.testing.assert_allclose(entropy(uniform), math.log(k), rtol=1e-6)
    np.testing.assert_allclose(entropy(uniform, normalized=True), 1.0, rtol=1e-6)
    assert entropy(onehot).max() == 0.0 and entropy(onehot, normalized=True).max() == 0.0
    p = np.array([0.7, 0.2, 0.1])
    expected = -(0.7 * math.log(0.7) + 0.2 * math.log(0.2) + 0.1 * math.log(0.1))
    assert float(entropy(p)) == pytest.approx(expected, rel=1e-6)
    assert float(entropy(p, normalized=True)) == pytest.approx(expected / math.log(3), rel=1e-6)


def test_entropy_axis_and_single_class():
    p = np.random.default_rng(0).dirichlet(np.ones(4), size=(3, 5))  # class axis last
    np.testing.assert_allclose(entropy(p, axis=-1), entropy(np.moveaxis(p, -1, 0)), rtol=1e-6)
    assert entropy(np.ones((1, 6)), normalized=True).tolist() == [0.0] * 6


def test_binary_entropy_matches_two_class_entropy():
    p = np.linspace(0, 1, 11)
    np.testing.assert_allclose(binary_entropy(p), entropy(np.stack([p, 1 - p]), normalized=True))
    assert binary_entropy(np.array([0.5]))[0] == pytest.approx(1.0)
    np.testing.assert_allclose(binary_entropy(p), binary_entropy(1 - p), atol=1e-7)


def test_sample_stats_equal_numpy():
    rng = np.random.default_rng(1)
    samples = rng.dirichlet(np.ones(3), size=(7, 4, 5)).transpose(0, 3, 1, 2)  # (N, K, 4, 5)
    s = SampleStats()
    for x in samples:
        s.add(x)
    assert s.n == 7
    np.testing.assert_allclose(s.mean, samples.mean(0), atol=1e-12)
    np.testing.assert_allclose(s.variance(), samples.var(0), atol=1e-12)
    np.testing.assert_allclose(
        s.mean_entropy(), np.mean([entropy(x, normalized=True) for x in samples], 0), atol=1e-6
    )
    with pytest.raises(ValueError):
        s.add(np.zeros((3, 2, 2)))


def test_identical_samples_have_exactly_zero_variance():
    p = np.random.default_rng(2).dirichlet(np.ones(4), size=(6, 6)).transpose(2, 0, 1)
    s = SampleStats()
    for _ in range(5):
        s.add(p)
    assert float(s.variance().max()) == 0.0
