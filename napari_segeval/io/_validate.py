"""Checks shared by every reader and writer: dimensionality, finite values, label ids, grids."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from napari_segeval._errors import GeometryMismatchError, InvalidImageError, InvalidLabelsError
from napari_segeval.io.case import Geometry


def check_image(image: np.ndarray, axes: str, source: str | Path) -> np.ndarray:
    """``image`` if it has the dimensions ``axes`` says and no infinite values (NaN unless all)."""
    if image.ndim != len(axes):
        raise InvalidImageError(
            f"{source}: array has {image.ndim} dimensions {image.shape}, "
            f"expected {len(axes)} for axes '{axes}'"
        )
    if image.size == 0:
        raise InvalidImageError(f"{source}: image is empty (shape {image.shape})")
    if image.dtype.kind == "f":
        # min and max are NaN when any voxel is: only then is each voxel looked at
        if not (np.isfinite(image.min()) and np.isfinite(image.max())):
            bad = int(np.count_nonzero(np.isinf(image)))
            if bad:
                raise InvalidImageError(f"{source}: {bad} of {image.size} voxels are infinite")
            if np.isnan(image).all():
                raise InvalidImageError(f"{source}: every voxel is NaN (no image data)")
    elif image.dtype.kind not in "biu":
        raise InvalidImageError(f"{source}: unsupported pixel type {image.dtype}")
    return image


def label_dtype(max_label: int) -> np.dtype:
    """Smallest unsigned integer type holding ``max_label``."""
    dt = np.min_scalar_type(max_label)
    if dt.kind == "u" and dt.itemsize <= 4:
        return dt
    raise InvalidLabelsError(f"label id {max_label} is too large (more than 32 bits)")


def as_labels(array: np.ndarray, source: str | Path) -> np.ndarray:
    """The label map as the smallest unsigned integer type; :class:`InvalidLabelsError` for
    NaN, non-integer and negative values (whole-numbered floats are fine)."""
    a = np.asarray(array)
    if a.size == 0:
        raise InvalidLabelsError(f"{source}: label map is empty (shape {a.shape})")
    if a.dtype.kind == "b":
        return a.astype(np.uint8)
    if a.dtype.kind == "f":
        finite = np.isfinite(a)
        if not finite.all():
            raise InvalidLabelsError(
                f"{source}: label map has {int((~finite).sum())} NaN or infinite values"
            )
        frac = a != np.round(a)
        if frac.any():
            raise InvalidLabelsError(
                f"{source}: label map has non-integer values (e.g. {a[frac].flat[0]:g}); "
                "labels must be whole numbers"
            )
    elif a.dtype.kind not in "iu":
        raise InvalidLabelsError(f"{source}: label map has unsupported type {a.dtype}")
    lo, hi = a.min(), a.max()
    if lo < 0:
        raise InvalidLabelsError(
            f"{source}: label map has negative ids (minimum {lo:g}); ids must be >= 0"
        )
    return a.astype(label_dtype(int(hi)), copy=False)


def check_same_grid(
    image_shape: tuple[int, ...],
    image_geometry: Geometry,
    labels_shape: tuple[int, ...],
    labels_geometry: Geometry,
    image_source: str | Path,
    labels_source: str | Path,
) -> None:
    """Raise :class:`GeometryMismatchError` (both files, shapes, spacings, origins) unless
    both arrays share one grid.
    """
    problems = []
    if tuple(labels_shape) != tuple(image_shape):
        problems.append(f"shape {tuple(labels_shape)} vs {tuple(image_shape)}")
    elif not labels_geometry.matches(image_geometry):
        problems.append(f"geometry {labels_geometry.describe()} vs {image_geometry.describe()}")
        if not np.allclose(labels_geometry.direction, image_geometry.direction, atol=1e-4):
            problems.append(f"direction {labels_geometry.direction} vs {image_geometry.direction}")
    if problems:
        raise GeometryMismatchError(
            f"labels {labels_source} do not match image {image_source}: " + "; ".join(problems)
        )
