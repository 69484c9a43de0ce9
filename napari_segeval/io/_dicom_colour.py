"""Colour DICOM images: which are colour, palette colour to RGB, subsampled YBR sizes.

Every colour DICOM image opens as 8-bit RGB (or the bits stored for RGB), never as a
grey picture of its codes:

* ``RGB`` and ``YBR_FULL`` / ``YBR_FULL_422`` pixels (three samples per pixel) are
  decoded by pydicom, which turns YBR into RGB. Uncompressed ``YBR_FULL_422`` data
  are subsampled: each pair of pixels of a row is stored as ``Y1 Y2 Cb Cr``, two
  samples per pixel instead of three (:func:`samples_stored`).
* ``PALETTE COLOR`` pixels (one sample per pixel: an index into three lookup
  tables; ultrasound and secondary capture) go through their palette with
  pydicom's :func:`~pydicom.pixels.apply_color_lut` (segmented palettes
  included). A palette with 16-bit entries gives 8-bit RGB by its high byte, as
  GDCM (SimpleITK) does, unless every colour the image uses is below 256 (8-bit
  values written in 16-bit entries, which some scanners do): those are kept as they are.

Several colour images of one stack (a multi-frame secondary capture, a folder of
screen captures) are a stack of RGB frames ``"tyxc"``: there are no colour volumes
(see :mod:`~napari_segeval.io._dicom_series`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from napari_segeval._errors import ReadError
from napari_segeval.io._quiet import quiet, reason

PALETTE = "PALETTE COLOR"


def photometric(ds) -> str:
    """``PhotometricInterpretation`` upper-cased and stripped (``""`` when absent).

    Examples
    --------
    >>> photometric({"PhotometricInterpretation": "palette color "})
    'PALETTE COLOR'
    """
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
    """Samples stored per pixel in uncompressed pixel data: 2 for ``YBR_FULL_422`` (two
    luminance samples share one Cb and one Cr), else ``SamplesPerPixel``.

    Examples
    --------
    >>> samples_stored({"SamplesPerPixel": 3, "PhotometricInterpretation": "YBR_FULL_422"})
    2
    >>> samples_stored({"SamplesPerPixel": 3, "PhotometricInterpretation": "RGB"})
    3
    """
    spp = _int(ds.get("SamplesPerPixel", 1))
    return 2 if spp == 3 and photometric(ds) == "YBR_FULL_422" else spp


def palette_rgb(indices: np.ndarray, ds, path: Path) -> np.ndarray:
    """RGB of palette colour ``indices`` (any leading frame axes) through the palette of
    ``ds``: ``(..., 3)`` uint8 (see the module docs for 16-bit palettes).

    Raises :class:`ReadError` with one line when the palette is missing or unusable.
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
