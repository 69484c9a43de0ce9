import threading

import numpy as np
import pytest
import torch

from napari_segeval._cancel import Cancelled
from napari_segeval.attacks import AttackConfig, DenseTarget, attack_case
from napari_segeval.attacks.losses import cross_entropy
from napari_segeval.models.registry import load_dense
from napari_segeval.phantoms.ct import make_ct_case

from .conftest import crop_case


@pytest.fixture
def tiny_model(tiny_dense_weights):
    return load_dense(tiny_dense_weights, device="cpu")


@pytest.fixture(scope="module")
def small_case():
    return make_ct_case(5, shape=(12, 40, 36))


@pytest.mark.parametrize("mirror", [False, [1, 2]])
def test_chunked_gradient_equals_whole_volume_gradient(tiny_model, small_case, mirror):
    whole = DenseTarget(tiny_model, small_case, gradient="whole", mirror=mirror)
    chunked = DenseTarget(tiny_model, small_case, gradient="chunked", mirror=mirror)
    x = whole.x.clone().requires_grad_(True)
    t = whole.reference_target()
    assert tuple(t.shape[1:]) == tuple(x.shape[2:])
    (g1,) = torch.autograd.grad(cross_entropy(whole.forward(x), t).sum(), x)
    (g2,) = torch.autograd.grad(cross_entropy(chunked.forward(x), t).sum(), x)
    assert g1.abs().max() > 0
    assert torch.allclose(g1, g2, rtol=1e-4, atol=1e-9)
    with torch.no_grad():
        assert torch.allclose(whole.forward(x), chunked.forward(x))


def test_attack_case_outputs_on_the_case_grid_in_raw_units(tiny_model, small_case):
    target = DenseTarget(tiny_model, small_case)
    res = attack_case(target, AttackConfig("pgd", eps=0.2, steps=3), clamp=True)
    shape = small_case.image.shape
    assert res.perturbed_image.shape == res.perturbation.shape == shape
    assert res.perturbed_image.dtype == np.float32
    assert res.clean_prediction.shape == res.attacked_prediction.shape == shape
    assert np.allclose(res.perturbed_image, small_case.image.astype(np.float32) + res.perturbation)
    # linear resampling back to the case grid keeps the L-inf bound in raw units
    assert np.abs(res.perturbation).max() <= res.budget.eps_raw * (1 + 1e-6)
    assert res.budget.eps_raw == pytest.approx(0.2 * 30.0)
    assert res.perturbation_normalized.shape == tuple(target.x.shape[1:])
    assert np.abs(res.perturbation_normalized).max() <= 0.2
    lo, hi = target.valid_range
    adv = target.x[0].numpy() + res.perturbation_normalized
    assert adv.min() >= lo - 1e-5 and adv.max() <= hi + 1e-5
    assert res.params["target"]["gradient"] == "whole"
    assert res.params["target"]["perturbation_grid"] == "model grid"
    assert res.params["attack"]["clamp"] == pytest.approx(list(target.valid_range))
    assert res.params["reference"] == "labels"
    assert [r["label"] for r in res.clean_rows] == [1, 2, 3, 4, 5]


def test_without_reference_the_clean_prediction_is_the_target(tiny_model, small_case):
    import dataclasses

    case = dataclasses.replace(small_case, labels=None)
    res = attack_case(DenseTarget(tiny_model, case), AttackConfig("fgsm", eps=0.5))
    assert res.params["reference"] == "clean prediction"
    assert all(r["dice"] == 1.0 for r in res.clean_rows)


def test_progress_and_cancel(tiny_model, small_case):
    seen = []
    attack_case(
        DenseTarget(tiny_model, small_case),
        AttackConfig("pgd", eps=0.1, steps=2),
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        attack_case(
            DenseTarget(tiny_model, small_case), AttackConfig("pgd", eps=0.1, steps=2), cancel=ev
        )


def test_rejects_unknown_gradient_mode(tiny_model, small_case):
    with pytest.raises(ValueError, match="gradient"):
        DenseTarget(tiny_model, small_case, gradient="patch")


def _mean_dice(rows):
    return float(np.mean([r["dice"] for r in rows]))


@pytest.fixture(scope="module")
def builtin_ct():
    return load_dense("builtin-ct", device="cpu")


@pytest.mark.slow
def test_builtin_ct_on_the_bundled_sample_attacked_dice_not_above_clean(builtin_ct, sample_ct):
    # a liver-centred block of the bundled CT: one sliding window on the model grid
    case = crop_case(sample_ct, (slice(8, 40), slice(16, 96), slice(16, 96)))
    target = DenseTarget(builtin_ct, case)
    means = []
    for eps in (0.1, 1.0):
        res = attack_case(target, AttackConfig("pgd", eps=eps, steps=2, random_start=False))
        clean = {r["label"]: r["dice"] for r in res.clean_rows}
        for r in res.attacked_rows:
            assert r["dice"] <= clean[r["label"]] + 0.05, (eps, r)
        assert _mean_dice(res.attacked_rows) <= _mean_dice(res.clean_rows)
        means.append(_mean_dice(res.attacked_rows))
    assert means[1] < means[0]
    assert means[1] < _mean_dice(res.clean_rows)
