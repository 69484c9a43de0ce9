"""Randomised appearance: known answers of the mappings, noises and the contrast guarantee."""

import numpy as np
import pytest
import torch

from napari_segeval.training import appearance as ap


def test_mappings_keep_unit_range_and_their_kind():
    x = torch.linspace(0, 1, 201)
    rng = np.random.default_rng(0)
    for _ in range(20):
        mono = ap.intensity_map(rng, x, "monotone")
        assert mono[0] == 0 and abs(float(mono[-1]) - 1) < 1e-5
        assert (mono.diff() >= -1e-6).all()
        g = ap.intensity_map(rng, x, "gamma")
        assert (g.diff() >= 0).all() and float(g.min()) >= 0 and float(g.max()) <= 1
        nm = ap.intensity_map(rng, x, "nonmonotone")
        assert float(nm.min()) >= 0 and float(nm.max()) <= 1
    assert torch.equal(ap.intensity_map(rng, x, "inverted"), 1 - x)
    # non-monotone curves do go down somewhere (most of the time)
    downs = sum(
        bool((ap.intensity_map(rng, x, "nonmonotone").diff() < -1e-4).any()) for _ in range(20)
    )
    assert downs >= 15


def test_posterize_gives_a_few_levels():
    x = torch.linspace(0, 1, 500)
    y = ap.intensity_map(np.random.default_rng(3), x, "posterize")
    assert 3 <= len(torch.unique(y)) <= 6


def test_unknown_kinds_are_refused():
    with pytest.raises(ValueError, match="unknown intensity mapping"):
        ap.intensity_map(np.random.default_rng(0), torch.zeros(3), "solarize")
    with pytest.raises(ValueError, match="unknown noise"):
        ap.add_noise(np.random.default_rng(0), torch.zeros(1, 4, 4), "pink", 0.1)


def test_noise_levels():
    rng = np.random.default_rng(0)
    x = torch.full((1, 128, 128), 0.5)
    assert float(ap.add_noise(rng, x, "gaussian", 0.05).std()) == pytest.approx(0.05, rel=0.05)
    rician = ap.add_noise(rng, torch.zeros(1, 128, 128), "rician", 0.1)
    assert float(rician.min()) >= 0 and float(rician.mean()) == pytest.approx(
        0.1 * np.sqrt(np.pi / 2), rel=0.05
    )  # Rayleigh mean on a zero signal
    speckle = ap.add_noise(rng, x, "speckle", 0.2)
    assert float(speckle.mean()) == pytest.approx(0.5, rel=0.05) and float(speckle.std()) > 0.05
    poisson = ap.add_noise(rng, x, "poisson", 0.05)
    assert float(poisson.std()) == pytest.approx(0.05, rel=0.1)
    imp = ap.add_noise(rng, x, "impulse", 0.1)
    frac = float(((imp == 0) | (imp == 1)).float().mean())
    assert 0.02 < frac < 0.04


def test_blur_preserves_the_mean_and_smooths():
    x = torch.zeros(1, 32, 32)
    x[0, 16, 16] = 1
    y = ap.blur(x, 1.5)
    assert float(y.sum()) == pytest.approx(1.0, rel=1e-4) and float(y.max()) < 0.1
    assert torch.equal(ap.blur(x, 0.1), x)


def test_render_keeps_the_object_visible():
    cls = torch.zeros(2, 32, 32, dtype=torch.long)
    cls[:, 8:24, 8:24] = 1
    cls[:, :, :4] = 2
    target = cls == 1
    for seed in range(10):
        rng = np.random.default_rng(seed)
        img = ap.render(rng, cls, 3, target=target, min_contrast=0.2)
        inside = float(img[:, 12:20, 12:20].mean())
        outside = float(img[:, 4:7, 4:28].mean())
        assert abs(inside - outside) > 0.12


def test_band_contrast_known_answer():
    cls = torch.zeros(1, 20, 20, dtype=torch.long)
    cls[:, 5:15, 5:15] = 1
    assert ap.band_contrast(cls, cls == 1, np.array([0.2, 0.7])) == pytest.approx(0.5)
    assert ap.band_contrast(cls, torch.zeros_like(cls, dtype=torch.bool), np.array([0, 1])) == 1.0


@pytest.mark.parametrize("style", ap.STYLES)
def test_restyle_is_reproducible_and_in_range(style):
    x = torch.rand(2, 40, 48)
    a = ap.restyle(np.random.default_rng(5), x, style=style)
    b = ap.restyle(np.random.default_rng(5), x, style=style)
    assert torch.equal(a, b) and a.shape == x.shape
    assert float(a.min()) >= 0 and float(a.max()) <= 1


def test_restyle_draws_only_the_families_it_is_given():
    x = torch.linspace(0, 1, 64).repeat(1, 64, 1)
    rng = np.random.default_rng(0)
    held = ap.HELDOUT_APPEARANCE
    assert set(ap.TRAIN_APPEARANCE["lut"]).isdisjoint(held["lut"])
    assert set(ap.TRAIN_APPEARANCE["noise"]).isdisjoint(held["noise"])
    assert set(ap.TRAIN_APPEARANCE["texture"]).isdisjoint(held["texture"])
    # posterized without blur or low resolution: few grey levels survive the window
    levels = []
    for _ in range(30):
        y = ap.restyle(
            rng,
            x,
            style="generic",
            families={"lut": ("posterize",), "noise": ("impulse",)},
            strength=1.0,
        )
        levels.append(len(torch.unique(y)))
    assert min(levels) <= 8
