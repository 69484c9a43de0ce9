"""NaN voxels (FSL/SPM padding): kept and counted by readers, filled with the minimum
finite intensity for models (docs/design.md, "NaN voxels").
"""

from __future__ import annotations

import numpy as np

from napari_segeval._errors import InvalidImageError


def nan_count(image: np.ndarray) -> int:
    """Number of NaN voxels (0 for integer images)."""
    a = np.asarray(image)
    return int(np.count_nonzero(np.isnan(a))) if a.dtype.kind in "fc" else 0


def nan_mask(image: np.ndarray) -> np.ndarray:
    """uint8 map, 1 where ``image`` is NaN (a colour voxel when any channel is)."""
    a = np.asarray(image)
    if a.dtype.kind not in "fc":
        return np.zeros(a.shape, np.uint8)
    return np.isnan(a).astype(np.uint8)


def fill_nan(image: np.ndarray, source: object = "image") -> tuple[np.ndarray, int]:
    """Copy of ``image`` with NaN replaced by its minimum finite value, and the NaN count.

    Integer images and images without NaN are returned as they are (no copy).
    """
    a = np.asarray(image)
    n = nan_count(a)
    if n == 0:
        return a, 0
    if n == a.size:
        raise InvalidImageError(f"{source}: every voxel is NaN (no image data)")
    filled = a.copy()
    filled[np.isnan(filled)] = np.nanmin(a)
    return filled, n
