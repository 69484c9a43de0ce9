"""TTA and MC-dropout on tiny dense models with known behaviour."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from torch import nn

from napari_segeval._cancel import Cancelled
from napari_segeval.inference.postprocess import PostprocessConfig
from napari_segeval.io import Case, Geometry
from napari_segeval.models.dense import DenseModel
from napari_segeval.uncertainty import dense_tta, entropy, mc_dropout


class Identity2(nn.Module):
    """Pointwise logits (x, -x): equivariant to any flip, changed by intensity."""

    def forward(self, x):
        return torch.cat([x, -x], dim=1)


class Constant(nn.Module):
    """Logits that ignore the input: invariant to every augmentation."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.tensor([0.3, -0.2, 0.1]))

    def forward(self, x):
        return self.bias.view(1, 3, 1, 1, 1).expand(x.shape[0], 3, *x.shape[2:]).clone()


class WithDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.conv = nn.Conv3d(1, 2, 1)
        self.norm = nn.BatchNorm3d(2)
        self.drop = nn.Dropout3d(p)

    def forward(self, x):
        return self.drop(self.norm(self.conv(x)))


def dense(net, k, spacing=None, mirror=(0, 1, 2)):
    return DenseModel(
        network=net.eval(),
        num_classes=k,
        structures={1: "a"},
        patch_size=(8, 8, 8),
        spacing=spacing,
        intensity=None,
        postprocessing=PostprocessConfig(),
        mirror_axes=mirror,
        name="toy",
        device=torch.device("cpu"),
    )


def small_case(shape=(10, 12, 14), spacing=(1.0, 1.0, 1.0)):
    img = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    return Case(img, Geometry.identity(3, spacing), axes="zyx", modality="CT")


def test_tta_identity_model_flips_give_zero_variance():
    case = small_case()
    m = dense_tta(
        dense(Identity2(), 2),
        case,
        n_samples=6,
        intensity_scale=0,
        intensity_shift=0,
        scale_range=0,
        seed=1,
    )
    flips = [a["flips"] for a in m.params["augmentations"]]
    assert any(flips[1:]), "the draw must flip at least once for this test to mean anything"
    np.testing.assert_allclose(m.variance, 0.0, atol=1e-10)
    x = torch.from_numpy(case.image)
    single = torch.softmax(torch.stack([x, -x]), 0).numpy()
    np.testing.assert_allclose(m.mean, single, atol=1e-5)
    np.testing.assert_allclose(m.entropy, entropy(single, normalized=True), atol=1e-5)
    np.testing.assert_array_equal(m.labels, (case.image < 0).astype(np.uint8))


def test_tta_intensity_changes_give_variance():
    m = dense_tta(
        dense(Identity2(), 2),
        small_case(),
        n_samples=4,
        intensity_scale=0.3,
        intensity_shift=0.3,
        scale_range=0,
    )
    assert float(m.variance.max()) > 1e-4
    assert m.mutual_information.max() > 0 and m.mutual_information.min() >= 0


def test_tta_invariant_model_all_augmentations_zero_variance():
    case = small_case(spacing=(2.0, 1.0, 1.0))
    m = dense_tta(
        dense(Constant(), 3, spacing=(1.5, 1.5, 1.5)), case, n_samples=5, scale_range=0.2, seed=3
    )
    assert {a["scale"] for a in m.params["augmentations"][1:]} != {1.0}
    assert m.entropy.shape == case.image.shape and m.mean.shape == (3, *case.image.shape)
    np.testing.assert_allclose(m.variance, 0.0, atol=1e-10)
    np.testing.assert_allclose(m.mean.sum(0), 1.0, atol=1e-5)
    expected = torch.softmax(torch.tensor([0.3, -0.2, 0.1]), 0).numpy()
    np.testing.assert_allclose(m.mean[:, 4, 5, 6], expected, atol=1e-5)


def test_tta_defaults_to_model_mirror_axes_and_validates():
    m = dense_tta(dense(Identity2(), 2, mirror=()), small_case(), n_samples=3)
    assert all(a["flips"] == [] for a in m.params["augmentations"])
    with pytest.raises(ValueError, match="flip_axes"):
        dense_tta(dense(Identity2(), 2), small_case(), flip_axes=(3,))
    with pytest.raises(ValueError, match="n_samples"):
        dense_tta(dense(Identity2(), 2), small_case(), n_samples=0)


def test_tta_progress_and_cancel():
    calls = []
    dense_tta(
        dense(Identity2(), 2), small_case(), n_samples=3, progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(1, 3), (2, 3), (3, 3)]
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        dense_tta(dense(Identity2(), 2), small_case(), n_samples=3, cancel=ev)


def test_mc_dropout_on_and_off():
    torch.manual_seed(0)
    model = dense(WithDropout(), 2)
    on = mc_dropout(model, small_case(), n_samples=4)
    assert on.n_samples == 4 and float(on.variance.max()) > 1e-3 and on.note == ""
    off = mc_dropout(model, small_case(), n_samples=4, enabled=False)
    assert off.n_samples == 4 and float(off.variance.max()) == 0.0 and "disabled" in off.note
    # only the dropout layer was switched, and everything is back in eval mode
    assert not any(m.training for m in model.network.modules())


def test_mc_dropout_without_dropout_layers_says_so():
    m = mc_dropout(dense(Identity2(), 2), small_case(), n_samples=5)
    assert m.n_samples == 1 and float(m.variance.max()) == 0.0
    assert "no dropout" in m.note
