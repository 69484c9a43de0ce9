"""Modality hints: DICOM tag, dataset.json, then intensity heuristics."""

from __future__ import annotations

import numpy as np

#: DICOM Modality (0008,0060) -> our modality names.
DICOM_MODALITIES = {
    "CT": "CT",
    "MR": "MR",
    "US": "US",
    "PT": "PET",
    "ES": "endoscopy",
    "DMS": "dermoscopy",
}


def from_dicom(tag: str | None) -> str | None:
    """Map a DICOM Modality value to ours (``None`` when absent)."""
    if not tag:
        return None
    return DICOM_MODALITIES.get(tag.strip().upper(), "other")


def guess_modality(image: np.ndarray, axes: str) -> str:
    """Guess a modality from the pixels: colour is endoscopy, grey video US, HU-like CT.

    CT: whole-numbered voxels whose minimum is at most -500; anything else ``"other"``.
    """
    if axes.endswith("c"):
        return "endoscopy"
    if axes == "tyx":
        return "US"
    if image.dtype.kind in "iuf" and image.size:
        lo = np.nanmin(image) if image.dtype.kind == "f" else image.min()  # NaN: padding
        if lo <= -500:
            sample = image.ravel()[:: max(1, image.size // 100_000)]
            if image.dtype.kind == "f":
                sample = sample[np.isfinite(sample)]
            if image.dtype.kind in "iu" or np.all(sample == np.round(sample)):
                return "CT"
    return "other"
