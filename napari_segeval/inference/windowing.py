"""CT windows and MR percentile clipping to the 0-255 range MedSAM2-style models expect.

``ct_mapping="window"`` maps a ``(level, width)`` window's edges to 0 and 255 (one HU, one
grey level); ``"minmax"`` (MedSAM2's scripts) min-max rescales the clipped volume. MR and
others: the 0.5-99.5 percentiles of the non-zero voxels, as MedSAM2 does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from napari_segeval._errors import InvalidImageError, SegEvalError
from napari_segeval.io._nan import fill_nan

#: Preset CT windows as ``name: (level, width)`` in HU.
CT_WINDOWS: dict[str, tuple[float, float]] = {
    "abdomen": (40.0, 400.0),
    "lung": (-600.0, 1500.0),
    "brain": (40.0, 80.0),
    "mediastinum": (50.0, 350.0),
}
DEFAULT_CT_WINDOW = "abdomen"
#: How a CT window maps to 0-255 (module doc): ``"window"`` (default) or ``"minmax"``.
CT_MAPPINGS = ("window", "minmax")


def ct_bounds(
    hu: np.ndarray | None, level: float, width: float, ct_mapping: str = "window"
) -> tuple[float, float]:
    """Raw HU mapped to 0 and 255 (``hu`` for ``"minmax"``; a constant clipped volume gives
    ``(v, v)``: all 0, where MedSAM2 divides by zero).
    """
    lo, hi = level - width / 2.0, level + width / 2.0
    if ct_mapping not in CT_MAPPINGS:
        raise SegEvalError(
            f"ct_mapping must be one of {', '.join(CT_MAPPINGS)}, got {ct_mapping!r}"
        )
    if ct_mapping == "window":
        return lo, hi
    if hu is None:
        raise SegEvalError("ct_mapping='minmax' depends on the image: pass the volume")
    arr = check_finite(np.asarray(hu))
    if arr.size == 0:
        return lo, hi
    return float(np.clip(arr.min(), lo, hi)), float(np.clip(arr.max(), lo, hi))


def parse_window(spec: str | Sequence[float] | None = None) -> tuple[float, float]:
    """``(level, width)`` of a preset of :data:`CT_WINDOWS` (any case; None: the default),
    ``"W,L"`` such as ``"400,40"`` (width first, as radiologists write ``W/L``) or a pair
    ``(width, level)``."""
    if spec is None:
        spec = DEFAULT_CT_WINDOW
    if isinstance(spec, str):
        key = spec.strip().lower()
        if key in CT_WINDOWS:
            return CT_WINDOWS[key]
        parts = key.replace("/", ",").split(",")
        try:
            width, level = (float(p) for p in parts)
        except ValueError:
            raise SegEvalError(
                f"unknown CT window {spec!r}: use one of {', '.join(CT_WINDOWS)} "
                "or 'W,L' (for example '400,40')"
            ) from None
    else:
        try:
            width, level = (float(v) for v in spec)
        except (TypeError, ValueError):
            raise SegEvalError(
                f"CT window must be a preset name or (width, level), got {spec!r}"
            ) from None
    if not (np.isfinite(width) and np.isfinite(level)) or width <= 0:
        raise SegEvalError(f"CT window width must be positive and finite, got W={width} L={level}")
    return level, width


def apply_window(
    hu: np.ndarray, level: float, width: float, ct_mapping: str = "window"
) -> np.ndarray:
    """Window CT intensities (HU) to float32 values in ``[0, 255]`` (module doc for ``ct_mapping``)."""
    if width <= 0:
        raise SegEvalError(f"CT window width must be positive, got {width}")
    arr = check_finite(np.asarray(hu, dtype=np.float64))
    wlo = level - width / 2.0
    return _to_255(arr, (wlo, wlo + width), *ct_bounds(arr, level, width, ct_mapping))


def _to_255(arr: np.ndarray, clip: tuple[float, float], lo: float, hi: float) -> np.ndarray:
    """``arr`` clipped to ``clip``, ``lo..hi`` scaled to float32 0..255 (0 when ``hi <= lo``)."""
    if hi <= lo:
        return np.zeros(arr.shape, dtype=np.float32)
    return ((np.clip(arr, *clip) - lo) * (255.0 / (hi - lo))).astype(np.float32)


def mr_bounds(image: np.ndarray, lower: float = 0.5, upper: float = 99.5) -> tuple[float, float]:
    """Percentiles ``lower`` and ``upper`` of the non-zero voxels (``(0, 0)`` if none)."""
    if not 0 <= lower < upper <= 100:
        raise SegEvalError(f"need 0 <= lower < upper <= 100, got {lower}, {upper}")
    nonzero = np.asarray(image)[np.asarray(image) != 0]
    if nonzero.size == 0:
        return 0.0, 0.0
    lo, hi = np.percentile(nonzero.astype(np.float64), [lower, upper])
    return float(lo), float(hi)


def mr_clip(image: np.ndarray, lower: float = 0.5, upper: float = 99.5) -> np.ndarray:
    """Clip to percentiles of the non-zero voxels and scale to float32 ``[0, 255]`` (a
    constant clipped image: all zeros)."""
    arr = check_finite(np.asarray(image, dtype=np.float64))
    lo, hi = mr_bounds(arr, lower, upper)
    return _to_255(arr, (lo, hi), lo, hi)


def window_bounds(
    modality: str,
    window: str | Sequence[float] | None = None,
    image: np.ndarray | None = None,
    ct_mapping: str = "window",
) -> tuple[float, float]:
    """Raw intensities mapped to 0 and 1 for ``modality``: CT as :func:`ct_bounds` (a
    constant: ``(v, v + 1e-6)``), MR/PET as :func:`mr_bounds` of ``image`` (required),
    anything else ``(0, 255)``."""
    mod = (modality or "other").upper()
    if mod == "CT":
        level, width = parse_window(window)
        lo, hi = ct_bounds(image, level, width, ct_mapping)
        return (lo, hi) if hi > lo else (lo, lo + 1e-6)
    if mod in ("MR", "PET"):
        if image is None:
            raise SegEvalError(f"{modality} normalization depends on the image: pass image=")
        lo, hi = mr_bounds(check_finite(np.asarray(image)))
        if hi <= lo:
            return (0.0, 1.0) if lo == hi == 0.0 else (lo, lo + 1e-6)
        return lo, hi
    return 0.0, 255.0


def to_unit(
    image: np.ndarray,
    modality: str,
    window: str | Sequence[float] | None = None,
    ct_mapping: str = "window",
) -> tuple[np.ndarray, float, float]:
    """``image`` as float32 in ``[0, 1]`` (:func:`window_bounds`) and the raw values mapped
    to 0 and 1."""
    arr = check_finite(np.asarray(image))
    lo, hi = window_bounds(modality, window, arr, ct_mapping)
    unit = (arr.astype(np.float32) - np.float32(lo)) / np.float32(hi - lo)
    return np.clip(unit, 0.0, 1.0).astype(np.float32, copy=False), lo, hi


def check_finite(arr: np.ndarray) -> np.ndarray:
    """NaN (padding) becomes the minimum intensity (napari_segeval.io._nan); inf is refused."""
    arr, _ = fill_nan(arr)
    if arr.size and arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise InvalidImageError("image contains infinite values")
    return arr
