import numpy as np
import pytest
import torch


class ToyNet(torch.nn.Module):
    """A small 2D conv net with 3 classes (random fixed weights)."""

    def __init__(self, classes: int = 3):
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, 3, padding=1),
            torch.nn.Tanh(),
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

    return dataclasses.replace(
        case, image=np.asarray(case.image)[sl], labels=np.asarray(case.labels)[sl]
    )
