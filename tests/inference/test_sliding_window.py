import threading

import numpy as np
import pytest
import torch

from napari_segeval._cancel import Cancelled
from napari_segeval.inference.sliding_window import (
    gaussian_weights,
    sliding_window_logits,
    window_grid,
    window_starts,
)


def _net(k=3, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv3d(1, 4, 3, padding=1), torch.nn.Tanh(), torch.nn.Conv3d(4, k, 3, padding=1)
    ).eval()


@pytest.mark.parametrize(
    "shape,patch,overlap",
    [
        ((37, 70, 53), (16, 32, 32), 0.5),
        ((20, 20, 20), (8, 8, 8), 0.0),
        ((9, 17, 30), (9, 16, 8), 0.75),
    ],
)
def test_grid_covers_every_voxel_and_stays_inside(shape, patch, overlap):
    cover = np.zeros(shape, int)
    for s in window_grid(shape, patch, overlap):
        assert all(sl.start >= 0 and sl.stop <= n for sl, n in zip(s, shape))
        cover[s] += 1
    assert cover.min() >= 1
    # last window aligned to the end on every axis
    for n, p in zip(shape, patch):
        assert window_starts(n, p, overlap)[-1] == n - p


def test_window_starts_values():
    assert window_starts(100, 64, 0.5) == [0, 32, 36]
    assert window_starts(10, 4, 0.0) == [0, 4, 6]
    assert window_starts(5, 5, 0.9) == [0]
    with pytest.raises(ValueError):
        window_starts(4, 5, 0.5)


def test_gaussian_weights_shape_peak_sigma_and_floor():
    w = gaussian_weights((16, 32, 8))
    assert w.shape == (16, 32, 8) and w.dtype == np.float32
    # symmetric, maximal at the centre
    np.testing.assert_allclose(w, w[::-1, ::-1, ::-1])
    peak = np.prod([np.exp(-(0.5**2) / (2 * s**2)) for s in (2.0, 4.0, 1.0)])
    assert w.max() == pytest.approx(peak, rel=1e-6)
    # 1D profile follows exp(-x^2 / (2 sigma^2)) with sigma = patch / 8
    g = gaussian_weights((33,), min_weight=0.0)
    x = np.arange(33) - 16
    np.testing.assert_allclose(g, np.exp(-(x**2) / (2 * (33 / 8) ** 2)), rtol=1e-5)
    # MONAI-style floor and nnU-Net zero replacement
    assert w.min() == pytest.approx(1e-3)
    tiny = gaussian_weights((64, 64, 64), sigma_scale=0.01, min_weight=0.0)
    assert tiny.min() > 0


def test_identity_predictor_is_reproduced():
    x = torch.randn(2, 1, 13, 21, 17)
    y = sliding_window_logits(
        lambda t: torch.cat([t, -t], 1), x, (8, 8, 8), overlap=0.5, batch_size=3
    )
    torch.testing.assert_close(y, torch.cat([x, -x], 1), rtol=1e-5, atol=1e-5)


def test_volume_smaller_than_patch_is_padded_and_cropped():
    x = torch.randn(1, 1, 5, 6, 7)
    net = _net()
    y = sliding_window_logits(net, x, (8, 8, 8))
    assert y.shape == (1, 3, 5, 6, 7)
    import torch.nn.functional as F

    with torch.no_grad():
        ref = net(F.pad(x, (0, 1, 1, 1, 1, 2)))[:, :, 1:6, 1:7, 0:7]
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "shape,patch,overlap,batch",
    [
        ((37, 70, 53), (16, 32, 32), 0.5, 4),
        ((10, 20, 30), (16, 32, 32), 0.25, 1),
        ((33, 33, 33), (16, 16, 16), 0.6, 3),
    ],
)
def test_parity_with_monai(shape, patch, overlap, batch):
    inferers = pytest.importorskip("monai.inferers")
    net = _net()
    x = torch.randn(2, 1, *shape)
    with torch.no_grad():
        ref = inferers.sliding_window_inference(
            x,
            patch,
            batch,
            net,
            overlap=overlap,
            mode="gaussian",
            sigma_scale=0.125,
            padding_mode="constant",
        )
        ours = sliding_window_logits(net, x, patch, overlap=overlap, batch_size=batch)
    assert (ref - ours).abs().max().item() < 1e-5


def test_gradient_flows_to_input():
    net = _net()
    for p in net.parameters():
        p.requires_grad_(False)
    x = torch.randn(1, 1, 12, 20, 20, requires_grad=True)
    y = sliding_window_logits(net, x, (8, 12, 12), overlap=0.5)
    y[:, 1].sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    # matches the gradient of a direct evaluation when one window covers the volume
    x2 = x.detach().clone().requires_grad_(True)
    sliding_window_logits(net, x2, (12, 20, 20))[:, 1].sum().backward()
    x3 = x.detach().clone().requires_grad_(True)
    net(x3)[:, 1].sum().backward()
    torch.testing.assert_close(x2.grad, x3.grad, rtol=1e-4, atol=1e-6)


def test_cpu_accumulation_mirroring_progress_and_cancel():
    net = _net()
    x = torch.randn(1, 1, 12, 20, 20)
    calls = []
    with torch.no_grad():
        a = sliding_window_logits(
            net, x, (8, 12, 12), accumulate_device="cpu", progress=lambda d, t: calls.append((d, t))
        )
        b = sliding_window_logits(net, x, (8, 12, 12), mirror_axes=(0, 2))
        flipped = sliding_window_logits(net, x.flip(4), (8, 12, 12)).flip(4)
    n = len(window_grid((12, 20, 20), (8, 12, 12), 0.5))
    assert calls[-1] == (n, n) and len(calls) == -(-n // 2)
    assert a.shape == b.shape == (1, 3, 12, 20, 20)
    assert not torch.allclose(a, b)
    # with one window, mirroring is invariant to flipping the input along a mirrored axis
    with torch.no_grad():
        c = sliding_window_logits(net, x, (12, 20, 20), mirror_axes=(0, 2))
        c2 = sliding_window_logits(net, x.flip(4), (12, 20, 20), mirror_axes=(0, 2)).flip(4)
    torch.testing.assert_close(c, c2, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(a, flipped)
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        sliding_window_logits(net, x, (8, 12, 12), cancel=ev)
