"""Resampling of volumes to a target spacing and back (nnU-Net style).

Grids are *edge aligned*: the resampled array covers exactly the physical extent of
the source (``shape * spacing``), so the output spacing is ``extent / new_shape``
(within rounding of ``target_spacing``) and a round trip lands on the source voxel
centres. Images use cubic (or linear) spline interpolation, labels nearest
neighbour. Anisotropic data (largest/smallest spacing > ``anisotropy_threshold``)
is resampled in-plane only with the requested order and with nearest neighbour
along the thick-slice axis, as nnU-Net does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import ndimage

from napari_segeval.io.case import Geometry

#: Spacing ratio above which data count as anisotropic.
ANISOTROPY_THRESHOLD = 3.0


@dataclass(frozen=True)
class ResampleInfo:
    """What :func:`resample_image` did (recorded with results).

    Attributes
    ----------
    source_shape, source_spacing : tuple
        Grid before resampling.
    target_spacing : tuple
        Requested spacing.
    shape, spacing : tuple
        Grid after resampling (``spacing`` is exact: ``extent / shape``).
    slice_axis : int or None
        Axis resampled with nearest neighbour (anisotropic data), else ``None``.
    order : int
        Spline order used for the image.
    """

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
    """Shape covering the same extent at ``target_spacing`` (at least 1 voxel per axis).

    Examples
    --------
    >>> resampled_shape((40, 112, 112), (2.5, 1.2, 1.2), (2.5, 1.6, 1.6))
    (40, 84, 84)
    """
    return tuple(max(1, round(n * s / t)) for n, s, t in zip(shape, spacing, target_spacing))


def slice_axis_of(spacing: Sequence[float], threshold: float = ANISOTROPY_THRESHOLD) -> int | None:
    """Index of the thick-slice axis when ``max/min spacing > threshold``, else ``None``.

    Examples
    --------
    >>> slice_axis_of((5.0, 0.8, 0.8)), slice_axis_of((2.5, 1.2, 1.2))
    (0, None)
    """
    sp = np.asarray(spacing, float)
    if sp.max() / sp.min() > threshold:
        return int(np.argmax(sp))
    return None


def _zoom_axes(
    array: np.ndarray, shape: Sequence[int], order: int, axes: Sequence[int]
) -> np.ndarray:
    """Edge-aligned zoom of ``axes`` of ``array`` to ``shape`` (other axes unchanged)."""
    factors = [1.0] * array.ndim
    for a in axes:
        factors[a] = shape[a] / array.shape[a]
    if all(f == 1.0 for f in factors):
        return array
    return ndimage.zoom(
        array, factors, order=order, mode="nearest", grid_mode=True, prefilter=order > 1
    )


def resample_to_shape(
    array: np.ndarray, shape: Sequence[int], *, order: int, slice_axis: int | None = None
) -> np.ndarray:
    """Resample the spatial ``array`` to ``shape`` (edge-aligned grids).

    With ``slice_axis`` set, the other axes use spline ``order`` and ``slice_axis``
    nearest neighbour. Output dtype: float32 for ``order > 0``, the input dtype for
    ``order == 0``.

    Examples
    --------
    >>> resample_to_shape(np.arange(4.0).reshape(1, 4), (1, 2), order=1)
    array([[0.5, 2.5]], dtype=float32)
    """
    shape = tuple(int(s) for s in shape)
    if tuple(array.shape) == shape:
        return array.astype(np.float32) if order > 0 else array
    data = array.astype(np.float32) if order > 0 else array
    if slice_axis is None:
        return _zoom_axes(data, shape, order, range(data.ndim)).astype(data.dtype, copy=False)
    in_plane = [a for a in range(data.ndim) if a != slice_axis]
    out = _zoom_axes(data, shape, order, in_plane)
    out = _zoom_axes(out, shape, 0, [slice_axis])
    return out.astype(data.dtype, copy=False)


def resample_image(
    image: np.ndarray,
    spacing: Sequence[float],
    target_spacing: Sequence[float],
    *,
    order: int = 3,
    anisotropy_threshold: float = ANISOTROPY_THRESHOLD,
) -> tuple[np.ndarray, ResampleInfo]:
    """Resample an intensity volume to ``target_spacing``.

    Parameters
    ----------
    image : numpy.ndarray
        Spatial array (no channel axis).
    spacing, target_spacing : sequence of float
        Source and requested spacing per array axis, mm.
    order : int
        Spline order (3 cubic, 1 linear).
    anisotropy_threshold : float
        Spacing ratio above which the thick axis is resampled with nearest neighbour.

    Returns
    -------
    (numpy.ndarray, ResampleInfo)
        float32 array and the record needed by :func:`resample_back`.

    Examples
    --------
    >>> img = np.random.default_rng(0).normal(size=(10, 20, 20))
    >>> out, info = resample_image(img, (2.0, 1.0, 1.0), (2.0, 2.0, 2.0), order=1)
    >>> out.shape, info.spacing
    ((10, 10, 10), (2.0, 2.0, 2.0))
    """
    spacing = tuple(float(s) for s in spacing)
    target = tuple(float(t) for t in target_spacing)
    shape = resampled_shape(image.shape, spacing, target)
    axis = slice_axis_of(spacing, anisotropy_threshold)
    out = resample_to_shape(image, shape, order=order, slice_axis=axis)
    new_spacing = tuple(n * s / m for n, s, m in zip(image.shape, spacing, shape))
    info = ResampleInfo(tuple(image.shape), spacing, target, shape, new_spacing, axis, order)
    return out.astype(np.float32, copy=False), info


def resample_labels(labels: np.ndarray, info: ResampleInfo) -> np.ndarray:
    """Resample a label map onto the grid of ``info`` with nearest neighbour.

    Examples
    --------
    >>> lab = np.zeros((4, 8, 8), np.uint8); lab[:, 2:6, 2:6] = 1
    >>> _, info = resample_image(lab.astype(float), (1, 1, 1), (1, 2, 2), order=1)
    >>> resample_labels(lab, info)[0]
    array([[0, 0, 0, 0],
           [0, 1, 1, 0],
           [0, 1, 1, 0],
           [0, 0, 0, 0]], dtype=uint8)
    """
    return resample_to_shape(labels, info.shape, order=0)


def resample_back(
    array: np.ndarray, info: ResampleInfo, *, order: int = 1, channel_axis: int | None = None
) -> np.ndarray:
    """Map an array on the resampled grid back to the source grid of ``info``.

    Use ``order=1`` for probabilities (then argmax) and ``order=0`` for labels.
    ``channel_axis`` (e.g. 0 for ``(K, z, y, x)``) is looped over.

    Examples
    --------
    >>> img = np.zeros((8, 8, 8)); img[2:6, 2:6, 2:6] = 1
    >>> small, info = resample_image(img, (1, 1, 1), (2, 2, 2), order=1)
    >>> resample_back(small, info, order=1).shape
    (8, 8, 8)
    """
    if channel_axis is not None:
        moved = np.moveaxis(array, channel_axis, 0)
        out = np.stack([resample_back(c, info, order=order) for c in moved])
        return np.moveaxis(out, 0, channel_axis)
    return resample_to_shape(array, info.source_shape, order=order, slice_axis=info.slice_axis)


def resampled_geometry(geometry: Geometry, info: ResampleInfo) -> Geometry:
    """Geometry of the resampled grid (same extent, new spacing, shifted origin).

    Examples
    --------
    >>> g = Geometry.identity(3, spacing=(1.0, 1.0, 1.0))
    >>> _, info = resample_image(np.zeros((4, 4, 4)), g.spacing, (2, 2, 2), order=1)
    >>> resampled_geometry(g, info).origin
    (0.5, 0.5, 0.5)
    """
    old = np.asarray(geometry.spacing)
    new = np.asarray(info.spacing)
    shift_itk = ((new - old) / 2.0)[::-1]  # ITK axis order is the array order reversed
    origin = np.asarray(geometry.origin) + geometry.direction_matrix @ shift_itk
    return Geometry(tuple(info.spacing), tuple(origin), geometry.direction)


def median_spacing(spacings: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """Per-axis median of several cases' spacings (nnU-Net's default target).

    Examples
    --------
    >>> median_spacing([(2.5, 0.8, 0.8), (5.0, 0.7, 0.7), (3.0, 0.9, 0.9)])
    (3.0, 0.8, 0.8)
    """
    return tuple(float(v) for v in np.median(np.asarray(spacings, float), axis=0))
