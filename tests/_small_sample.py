"""Small MSD-layout tasks for cheap protocol runs: the sample task cropped in-plane to one
window of the built-in CT model, and a one-case task from a label map."""

from __future__ import annotations

import json
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"


def cropped_sample(dst_parent: Path, n_cases: int | None = None) -> Path:
    """Write the sample task, its first ``n_cases`` cases, cropped to 54 x 54 voxels in-plane.

    The crop (x 16:70, y 24:78 of 96 x 96 voxels of 1.4 mm, all 32 slices) holds all five
    structures of every sample case and resamples to one 48 x 48 patch of the built-in
    model, so a forward pass is one window instead of nine. Geometry (origin, spacing,
    direction) is that of the crop in the original volume.
    """
    import SimpleITK as sitk

    root = dst_parent / SAMPLE.name
    ds = json.loads((SAMPLE / "dataset.json").read_text())
    ds["training"] = ds["training"][:n_cases]
    ds["numTraining"] = len(ds["training"])
    for case in ds["training"]:
        for key in ("image", "label"):
            dst = root / case[key]
            dst.parent.mkdir(parents=True, exist_ok=True)
            img = sitk.ReadImage(str(SAMPLE / case[key]))
            sitk.WriteImage(img[16:70, 24:78, :], str(dst))  # x, y, z
    (root / "dataset.json").write_text(json.dumps(ds))
    return root


def one_case_task(root: Path, labels, name: str = "isl") -> Path:
    """Write an MSD-layout task of one CT case, organ label 1, at ``root``: ``labels``
    (``(z, y, x)`` integers), the image 200 HU inside and -1000 outside, spacing
    2 x 1 x 1 mm."""
    import numpy as np

    from napari_segeval.io import Geometry, write_image, write_labels

    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    image = np.where(labels > 0, 200, -1000).astype(np.int16)
    g = Geometry.identity(3, (2.0, 1.0, 1.0))
    write_image(root / "imagesTr" / f"{name}.nii.gz", image, g)
    write_labels(root / "labelsTr" / f"{name}.nii.gz", labels, g)
    (root / "dataset.json").write_text(
        json.dumps(
            {
                "modality": {"0": "CT"},
                "labels": {"0": "background", "1": "organ"},
                "training": [
                    {"image": f"./imagesTr/{name}.nii.gz", "label": f"./labelsTr/{name}.nii.gz"}
                ],
            }
        )
    )
    return root
