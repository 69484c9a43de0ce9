import pytest
import torch

from napari_segeval.models.dense.unet import UNet3D, UNetConfig


@pytest.mark.parametrize("levels", [2, 3, 4])
def test_shapes_and_gradient(levels):
    cfg = UNetConfig(num_classes=4, base_channels=2, levels=levels)
    net = UNet3D(cfg)
    n = 2 ** (levels - 1) * 2  # sizes divisible by 2 ** (levels - 1)
    x = torch.randn(2, 1, n, n, 2 * n, requires_grad=True)
    y = net(x)
    assert y.shape == (2, 4, n, n, 2 * n)
    y.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert cfg.to_dict()["levels"] == levels
