"""LiteMedSAM's intensity step: raw intensities to the authors' 8-bit grey.

CT: window edges (or ``ct_mapping="minmax"``, the authors' ``pre_CT_MR.py``); MR/PET: 0.5 and
99.5 percentiles of the non-zero voxels, zeros kept. One normalized unit is 255 grey levels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from napari_segeval._errors import InvalidImageError
from napari_segeval.models.base import NormalizeInfo

#: Modalities whose 8-bit grey levels are kept (above 255: stretched from min..max).
VIDEO = (
    *("us", "endoscopy", "rgb", "video", "xray", "x-ray"),
    *("fundus", "dermoscopy", "microscopy", "other2d"),
)


def video_span(image: np.ndarray | None) -> tuple[float, float]:
    """The raw span a video modality maps to 0-255: 0..255, or min..max above 255."""
    a = np.asarray(image if image is not None else ())
    return (float(a.min()), float(a.max())) if a.size and float(a.max()) > 255 else (0.0, 255.0)


def to_uint8(
    image: np.ndarray, modality: str, window: Any = None, ct_mapping: str = "window"
) -> np.ndarray:
    """Raw intensities -> the authors' uint8 (module doc).

    Examples
    --------
    >>> to_uint8(np.array([[-200.0, 40.0, 500.0]]), "CT").tolist()
    [[0, 127, 255]]
    >>> to_uint8(np.array([[0.0, 10.0, 20.0, 30.0]]), "MR").tolist()
    [[0, 0, 127, 255]]
    >>> to_uint8(np.array([[0, 1000, 4000]]), "US").tolist()
    [[0, 63, 255]]
    """
    from napari_segeval.inference.windowing import (
        DEFAULT_CT_WINDOW,
        apply_window,
        check_finite,
        mr_clip,
        parse_window,
    )

    arr = check_finite(np.asarray(image))
    mod = (modality or "other").lower()
    if mod == "ct":
        level, width = parse_window(window if window is not None else DEFAULT_CT_WINDOW)
        return apply_window(arr, level, width, ct_mapping).astype(np.uint8)
    if mod in VIDEO:
        f = arr.astype(np.float64)
        lo, hi = video_span(f)
        if hi > 255:
            f = (f - lo) / (hi - lo) * 255.0
        return np.clip(f, 0, 255).astype(np.uint8)
    out = mr_clip(arr)
    out[arr == 0] = 0
    return out.astype(np.uint8)


def preprocess(image: np.ndarray, modality: str, window: Any, ct_mapping: str) -> Any:
    """Raw ``(n, H, W)`` (or RGB ``(n, H, W, 3)``) -> float32 grey levels / 255.

    Examples
    --------
    >>> preprocess(np.full((2, 8, 8), 40.0), "CT", None, "window").max().item()
    0.4980392158031464
    """
    import torch

    arr = np.asarray(image)
    if arr.ndim == 2:
        arr = arr[None]
    rgb = arr.ndim == 4 and arr.shape[-1] in (3, 4)
    if arr.ndim != 3 and not rgb:
        raise InvalidImageError(
            f"LiteMedSAM takes (n, H, W) slices or (n, H, W, 3) RGB frames, got shape {arr.shape}"
        )
    arr = arr[..., :3] if rgb else arr
    u8 = to_uint8(arr, "rgb" if rgb else modality, window, ct_mapping)
    return torch.from_numpy(u8.astype(np.float32) / np.float32(255.0))


def normalize_info(modality: str, window: Any, image: Any, ct_mapping: str) -> NormalizeInfo:
    """One normalized unit = the raw span mapped to 0-255."""
    from napari_segeval.inference.windowing import window_bounds

    if (modality or "other").lower() in VIDEO:
        lo, hi = video_span(image)
    else:
        lo, hi = window_bounds(modality, window, image, ct_mapping)
    return NormalizeInfo(
        hi - lo, 0.0, 1.0, f"{modality}: raw [{lo:g}, {hi:g}] -> 0..255 -> / 255 (LiteMedSAM)"
    )
