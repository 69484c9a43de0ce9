import numpy as np
import pytest

torch = pytest.importorskip("torch")


class ToyNet(torch.nn.Module):
    """A small 2D conv net with 3 classes (random fixed weights)."""

    def __init__(self, classes: int = 3):
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.Tanh(),
            torch.nn.Conv2d(8, classes, 3, padding=1),
        )
        self.eval()
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        return self.body(x)


@pytest.fixture(scope="session")
def toy():
    """(net, x, target): 3 cases of 1x16x16 and the clean prediction as target."""
    net = ToyNet()
    x = torch.randn(3, 1, 16, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        target = net(x).argmax(1)
    return net, x, target


@pytest.fixture
def tiny_dense_weights(tmp_path):
    """A small random U-Net in the built-in dense weights format."""
    from napari_segeval.models.dense import BUILTIN_PLANS
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    torch.manual_seed(0)
    cfg = {"in_channels": 1, "num_classes": 6, "base_channels": 2, "levels": 2}
    net = UNet3D(UNetConfig(**cfg))
    payload = dict(BUILTIN_PLANS)
    payload.update(config=cfg, patch_size=[8, 16, 16], spacing=[2.5, 2.4, 2.4],
                   intensity={"lower": -20.0, "upper": 160.0, "mean": 60.0, "std": 30.0},
                   lesion_min_mm3={"5": 50.0}, state_dict=net.state_dict())
    path = tmp_path / "tiny.pt"
    torch.save(payload, path)
    return path


@pytest.fixture(scope="session")
def sample_ct():
    """The bundled CT sample (read once)."""
    from pathlib import Path

    from napari_segeval.io import read_case

    root = Path(__file__).resolve().parents[2] / "sample_data" / "ct"
    return read_case(root / "ct_001.nii.gz", root / "ct_001_labels.nii.gz")


def crop_case(case, sl):
    """The case restricted to a sub-block (geometry origin unchanged: metrics only)."""
    import dataclasses

    return dataclasses.replace(case, image=np.asarray(case.image)[sl],
                               labels=np.asarray(case.labels)[sl])
