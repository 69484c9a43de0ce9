import pytest
import torch


@pytest.fixture
def tiny_weights(tmp_path):
    """A small random U-Net saved in the built-in weights format."""
    from napari_segeval.models.dense import BUILTIN_PLANS
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    torch.manual_seed(0)
    cfg = {"in_channels": 1, "num_classes": 6, "base_channels": 2, "levels": 2}
    net = UNet3D(UNetConfig(**cfg))
    payload = {k: v for k, v in BUILTIN_PLANS.items()}
    payload.update(config=cfg, patch_size=[8, 16, 16], spacing=[2.5, 2.4, 2.4],
                   intensity={"lower": -20.0, "upper": 160.0, "mean": 60.0, "std": 30.0},
                   lesion_min_mm3={"5": 50.0}, state_dict=net.state_dict())
    path = tmp_path / "tiny.pt"
    torch.save(payload, path)
    return path
