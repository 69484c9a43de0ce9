"""Colour DICOM images: which are colour, palette colour to RGB, subsampled YBR sizes.

RGB and YBR pixels are decoded by pydicom (uncompressed ``YBR_FULL_422`` stores two
samples per pixel). ``PALETTE COLOR`` goes through pydicom's ``apply_color_lut``; 16-bit
entries give 8-bit RGB by their high byte (as GDCM) unless every colour used is below 256.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from napari_segeval._errors import ReadError
from napari_segeval.io._quiet import quiet, reason

PALETTE = "PALETTE COLOR"


def photometric(ds) -> str:
    """``PhotometricInterpretation`` upper-cased and stripped (``""`` when absent)."""
    return str(ds.get("PhotometricInterpretation", "") or "").strip().upper()


def is_colour(ds) -> bool:
    """True for images that open as RGB: three samples per pixel, or a palette.

    Examples
    --------
    >>> is_colour({"SamplesPerPixel": 3}), is_colour({"PhotometricInterpretation": "PALETTE COLOR"})
    (True, True)
    >>> is_colour({"SamplesPerPixel": 1, "PhotometricInterpretation": "MONOCHROME2"})
    False
    """
    return _int(ds.get("SamplesPerPixel", 1)) > 1 or photometric(ds) == PALETTE


def samples_stored(ds) -> int:
    """Samples stored per pixel uncompressed: 2 for ``YBR_FULL_422``, else ``SamplesPerPixel``.

    Examples
    --------
    >>> samples_stored({"SamplesPerPixel": 3, "PhotometricInterpretation": "YBR_FULL_422"})
    2
    """
    spp = _int(ds.get("SamplesPerPixel", 1))
    return 2 if spp == 3 and photometric(ds) == "YBR_FULL_422" else spp


def palette_rgb(indices: np.ndarray, ds, path: Path) -> np.ndarray:
    """``(..., 3)`` uint8 RGB of palette ``indices`` through the palette of ``ds``.

    Raises :class:`ReadError` when the palette is missing or unusable.
    """
    from pydicom.pixels import apply_color_lut

    with quiet():
        try:
            rgb = apply_color_lut(indices, ds)
        except Exception as exc:
            raise ReadError(
                f"{path}: PALETTE COLOR image has no usable palette ({reason(exc)})"
            ) from exc
    rgb = rgb[..., :3]  # an alpha palette is not shown
    if rgb.dtype == np.uint16:
        rgb = rgb.astype(np.uint8) if int(rgb.max(initial=0)) < 256 else (rgb >> 8).astype(np.uint8)
    return np.ascontiguousarray(rgb)


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 1
