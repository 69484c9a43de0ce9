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
    """Map a DICOM Modality value to ours (``None`` when absent).

    Examples
    --------
    >>> from_dicom("PT"), from_dicom("CR"), from_dicom(None)
    ('PET', 'other', None)
    """
    if not tag:
        return None
    return DICOM_MODALITIES.get(tag.strip().upper(), "other")


def guess_modality(image: np.ndarray, axes: str) -> str:
    """Guess a modality from the pixels alone.

    Colour images are endoscopy, grey videos ultrasound, and whole-numbered images
    whose minimum is at most -500 are CT (Hounsfield units); anything else is
    ``"other"``.

    Examples
    --------
    >>> guess_modality(np.full((2, 2, 2), -1024, np.int16), "zyx")
    'CT'
    >>> guess_modality(np.zeros((2, 4, 4), np.uint8), "tyx")
    'US'
    >>> guess_modality(np.zeros((4, 4, 3), np.uint8), "yxc")
    'endoscopy'
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
