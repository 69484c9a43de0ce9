"""A generated two-channel MR task (MSD Prostate-like: T2 and ADC) and a tiny model for it.

The gland (label 1) is visible only in channel 0 and the lesion (label 2) only in
channel 1, at different intensity scales, so a model needs both channels, each
normalized with its own statistics. The task is written in the two forms data sets
use: one 4D NIfTI per case (the MSD's: the fourth file axis is the channel) and one
file per channel (``_0000``, ``_0001``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SHAPE = (12, 24, 24)
SPACING = (2.0, 1.0, 1.0)
CHANNELS = {"0": "T2", "1": "ADC"}
LABELS = {"0": "background", "1": "gland", "2": "lesion"}
PLANS_SPACING = [2.0, 1.5, 1.5]
PATCH = [8, 16, 16]


def two_channel_volume(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Image ``(2, z, y, x)`` (T2-like ~100/400, ADC-like ~1000/300) and labels."""
    rng = np.random.default_rng(seed)
    zz, yy, xx = np.ogrid[: SHAPE[0], : SHAPE[1], : SHAPE[2]]
    cz, cy, cx = 6 + rng.integers(-1, 2), 12 + rng.integers(-2, 3), 12 + rng.integers(-2, 3)
    labels = np.zeros(SHAPE, np.uint8)
    labels[((zz - cz) * 2.0) ** 2 + (yy - cy) ** 2 + (xx - cx) ** 2 <= 49] = 1
    ly, lx = cy + int(rng.integers(-2, 3)), cx + 2
    labels[((zz - cz) * 2.0) ** 2 + (yy - ly) ** 2 + (xx - lx) ** 2 <= 6] = 2
    t2 = np.where(labels > 0, 400.0, 100.0) + rng.normal(0, 20, SHAPE)
    adc = np.where(labels == 2, 300.0, 1000.0) + rng.normal(0, 50, SHAPE)
    return np.stack([t2, adc]).astype(np.float32), labels


def write_two_channel_task(root: Path, variant: str, n: int = 3, seeds=None) -> Path:
    """An MSD task folder: ``variant`` ``"4d"`` (one 4D file per case) or ``"files"`` (_0000, _0001)."""
    import nibabel as nib

    from napari_segeval.io import Geometry, write_image, write_labels
    from napari_segeval.io._nifti import affine_from_geometry

    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    g = Geometry.identity(3, SPACING)
    training = []
    for i, seed in enumerate(seeds or range(n)):
        cid = f"pro_{i:03d}"
        image, labels = two_channel_volume(seed)
        if variant == "4d":
            data = np.ascontiguousarray(np.transpose(image, (3, 2, 1, 0)))  # (x, y, z, c)
            nib.save(
                nib.Nifti1Image(data, affine_from_geometry(g)),
                str(root / "imagesTr" / f"{cid}.nii.gz"),
            )
        else:
            for c in range(image.shape[0]):
                write_image(root / "imagesTr" / f"{cid}_{c:04d}.nii.gz", image[c], g)
        write_labels(root / "labelsTr" / f"{cid}.nii.gz", labels, g)
        training.append({"image": f"./imagesTr/{cid}.nii.gz", "label": f"./labelsTr/{cid}.nii.gz"})
    ds = {
        "name": "TwoChannel",
        "modality": CHANNELS,
        "labels": LABELS,
        "numTraining": len(training),
        "training": training,
        "test": [],
    }
    (root / "dataset.json").write_text(json.dumps(ds))
    return root


def two_channel_plans(stats) -> dict:
    """Plans of the tiny two-channel built-in-architecture U-Net."""
    return {
        "format": "napari-segeval-dense/1",
        "architecture": "unet3d",
        "config": {"in_channels": 2, "num_classes": 3, "base_channels": 4, "levels": 2},
        "spacing": PLANS_SPACING,
        "patch_size": PATCH,
        "modality": "MR",
        "structures": {"1": "gland", "2": "lesion"},
        "organs": [1],
        "lesions": [2],
        "intensity": [s.to_dict() for s in stats],
    }


def train_two_channel_model(path: Path, steps: int = 60, seed: int = 0) -> Path:
    """Train the tiny U-Net a few steps on generated cases and save it with its plans."""
    import torch

    from napari_segeval.inference.intensity import foreground_intensity_stats
    from napari_segeval.inference.resample import resample_labels
    from napari_segeval.io import Case, Geometry
    from napari_segeval.models.dense._plans import model_from_plans
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    torch.manual_seed(seed)
    train = [two_channel_volume(100 + s) for s in range(4)]
    plans = two_channel_plans(
        tuple(foreground_intensity_stats((im[c], lab) for im, lab in train) for c in range(2))
    )
    net = UNet3D(UNetConfig(**plans["config"]))
    model = model_from_plans(plans, net, "two-channel", "cpu", {})
    g = Geometry.identity(3, SPACING)
    xs, ys = [], []
    for image, labels in train:
        x, info = model.preprocess(Case(image, g, "czyx", "MR", labels))
        xs.append(x)
        ys.append(torch.from_numpy(resample_labels(labels, info.resample).astype(np.int64)))
    x, y = torch.cat(xs), torch.stack(ys)
    net.train()
    for p in net.parameters():
        p.requires_grad_(True)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    weight = torch.tensor([0.2, 1.0, 3.0])
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y, weight=weight)
        loss.backward()
        opt.step()
    torch.save({"state_dict": net.state_dict(), **plans}, path)
    return path
