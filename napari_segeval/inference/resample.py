"""Resampling of volumes to a target spacing and back (nnU-Net style).

Grids are edge aligned (spacing ``extent / new_shape``: a round trip lands on the source
voxel centres); anisotropic data use nearest neighbour along the thick-slice axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import ndimage

#: Spacing ratio above which data count as anisotropic.
ANISOTROPY_THRESHOLD = 3.0


@dataclass(frozen=True)
class ResampleInfo:
    """What :func:`resample_image` did (recorded with results): ``shape``/``spacing`` after
    it, ``slice_axis`` resampled with nearest neighbour, the image's spline ``order``."""

    source_shape: tuple[int, ...]
    source_spacing: tuple[float, ...]
    target_spacing: tuple[float, ...]
    shape: tuple[int, ...]
    spacing: tuple[float, ...]
    slice_axis: int | None
    order: int

    @property
    def identity(self) -> bool:
        """True when resampling changes nothing."""
        return self.shape == self.source_shape

    def to_dict(self) -> dict:
        """Plain dict (for JSON records)."""
        return asdict(self)


def resampled_shape(
    shape: Sequence[int], spacing: Sequence[float], target_spacing: Sequence[float]
) -> tuple[int, ...]:
    """Shape covering the same extent at ``target_spacing`` (at least 1 voxel per axis)."""
    return tuple(max(1, round(n * s / t)) for n, s, t in zip(shape, spacing, target_spacing))


def slice_axis_of(spacing: Sequence[float], threshold: float = ANISOTROPY_THRESHOLD) -> int | None:
    """Index of the thick-slice axis when ``max/min spacing > threshold``, else ``None``."""
    sp = np.asarray(spacing, float)
    return int(np.argmax(sp)) if sp.max() / sp.min() > threshold else None


def _zoom_axes(
    array: np.ndarray, shape: Sequence[int], order: int, axes: Sequence[int]
) -> np.ndarray:
    """Edge-aligned zoom of ``axes`` of ``array`` to ``shape`` (other axes unchanged)."""
    factors = [shape[a] / array.shape[a] if a in axes else 1.0 for a in range(array.ndim)]
    if all(f == 1.0 for f in factors):
        return array
    return ndimage.zoom(
        array, factors, order=order, mode="nearest", grid_mode=True, prefilter=order > 1
    )


def resample_to_shape(
    array: np.ndarray, shape: Sequence[int], *, order: int, slice_axis: int | None = None
) -> np.ndarray:
    """Resample ``array`` to ``shape`` (``slice_axis`` nearest): float32, or for ``order``
    0 the input dtype.
    """
    shape = tuple(int(s) for s in shape)
    data = array.astype(np.float32) if order > 0 else array
    if tuple(array.shape) == shape:
        return data
    if slice_axis is None:
        return _zoom_axes(data, shape, order, range(data.ndim)).astype(data.dtype, copy=False)
    out = _zoom_axes(data, shape, order, [a for a in range(data.ndim) if a != slice_axis])
    return _zoom_axes(out, shape, 0, [slice_axis]).astype(data.dtype, copy=False)


def resample_image(
    image: np.ndarray,
    spacing: Sequence[float],
    target_spacing: Sequence[float],
    *,
    order: int = 3,
) -> tuple[np.ndarray, ResampleInfo]:
    """Resample an intensity volume (mm spacings) to float32 at ``target_spacing``, and the
    record :func:`resample_back` needs; ``order`` is the spline order, the thick axis
    (spacing ratio above :data:`ANISOTROPY_THRESHOLD`) nearest neighbour."""
    spacing = tuple(float(s) for s in spacing)
    target = tuple(float(t) for t in target_spacing)
    shape = resampled_shape(image.shape, spacing, target)
    axis = slice_axis_of(spacing)
    out = resample_to_shape(image, shape, order=order, slice_axis=axis)
    new_spacing = tuple(n * s / m for n, s, m in zip(image.shape, spacing, shape))
    info = ResampleInfo(tuple(image.shape), spacing, target, shape, new_spacing, axis, order)
    return out.astype(np.float32, copy=False), info


def resample_labels(labels: np.ndarray, info: ResampleInfo) -> np.ndarray:
    """Resample a label map onto the grid of ``info`` with nearest neighbour."""
    return resample_to_shape(labels, info.shape, order=0)


def resample_back(
    array: np.ndarray, info: ResampleInfo, *, order: int = 1, channel_axis: int | None = None
) -> np.ndarray:
    """Map an array back to the source grid of ``info`` (``order`` 1: probabilities, 0:
    labels; ``channel_axis`` looped over)."""
    if channel_axis is not None:
        moved = np.moveaxis(array, channel_axis, 0)
        out = np.stack([resample_back(c, info, order=order) for c in moved])
        return np.moveaxis(out, 0, channel_axis)
    return resample_to_shape(array, info.source_shape, order=order, slice_axis=info.slice_axis)


def median_spacing(spacings: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """Per-axis median of several cases' spacings (nnU-Net's default target)."""
    return tuple(float(v) for v in np.median(np.asarray(spacings, float), axis=0))
