"""Writing label maps and images with their source geometry, atomically; the extension
picks the format (NIfTI, MHA/NRRD/MHD, ``.png`` label maps, ``.tif`` on the pixel grid).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

from napari_segeval._atomic import atomic_path
from napari_segeval._errors import WriteError
from napari_segeval.io._formats import NIFTI, WRITABLE, suffix
from napari_segeval.io._quiet import one_line_errors
from napari_segeval.io._raster import check_pixel_grid, check_png_labels
from napari_segeval.io._validate import as_labels
from napari_segeval.io.case import Geometry

#: TIFF holds label maps and images of raster inputs (pixel grid).
TIFF = (".tif", ".tiff")
#: Label maps can also be written as PNG (2D, pixel grid) or TIFF.
LABEL_WRITABLE = (*WRITABLE, ".png", *TIFF)
#: Images: the geometry formats, and TIFF for raster inputs.
IMAGE_WRITABLE = (*WRITABLE, *TIFF)


def check_target(path: Path, overwrite: bool, formats: tuple[str, ...], what: str = "") -> None:
    """Refuse a format not in ``formats``, a missing folder, an existing file unless ``overwrite``."""
    if suffix(path) not in formats:
        raise WriteError(
            f"{path}: cannot write {what}this format (use one of {', '.join(formats)})"
        )
    if not path.parent.is_dir():
        raise WriteError(f"{path}: folder {path.parent} does not exist")
    if not overwrite and path.exists():
        raise WriteError(f"{path}: file exists; pass overwrite=True to replace it")


#: Suffix -> (module of this package, writer); anything else of WRITABLE goes through
#: SimpleITK.
_WRITERS = {
    **dict.fromkeys(NIFTI, ("_nifti", "write_nifti")),
    ".png": ("_raster", "write_png_labels"),
    **dict.fromkeys(TIFF, ("_raster", "write_tiff")),
}


def _write_atomic(
    path: Path, array: np.ndarray, geometry: Geometry, overwrite: bool, colour: bool
) -> Path:
    extra = array.ndim - geometry.ndim
    if extra not in ((0, 1) if colour else (0,)) or (extra == 1 and array.shape[-1] != 3):
        raise WriteError(
            f"{path}: array of shape {array.shape} does not fit a {geometry.ndim}D geometry"
        )
    if suffix(path) in TIFF:
        check_pixel_grid(path, geometry)
    elif suffix(path) == ".png":
        check_png_labels(path, array, geometry)
    module, name = _WRITERS.get(suffix(path), ("_sitk", "write_itk"))
    writer = getattr(importlib.import_module(f"napari_segeval.io.{module}"), name)
    failing = one_line_errors(f"{path}: cannot write", WriteError)
    with failing, atomic_path(path, overwrite=overwrite) as tmp:
        writer(tmp, array, geometry)
    return path


def write_labels(
    path: str | Path, labels: np.ndarray, geometry: Geometry, *, overwrite: bool = False
) -> Path:
    """Write an integer label map with ``geometry`` (the source image's), smallest uint type.

    ``.png`` takes 2D maps on a pixel grid only.
    """
    p = Path(path)
    check_target(p, overwrite, LABEL_WRITABLE)
    return _write_atomic(p, as_labels(np.asarray(labels), p), geometry, overwrite, colour=False)


def _image_dtype(path: Path, image: np.ndarray) -> np.ndarray:
    if image.dtype.kind == "f":
        return image.astype(np.float32, copy=False)
    if image.dtype.kind == "b":
        return image.astype(np.uint8)
    if image.dtype.itemsize == 8 and image.dtype.kind in "iu":
        lo, hi = (int(image.min()), int(image.max())) if image.size else (0, 0)
        if lo < np.iinfo(np.int32).min or hi > np.iinfo(np.int32).max:
            raise WriteError(f"{path}: 64-bit integer values outside the 32-bit range")
        return image.astype(np.int32)
    if image.dtype.kind not in "iu":
        raise WriteError(f"{path}: cannot write pixel type {image.dtype}")
    return image


def write_image(
    path: str | Path, image: np.ndarray, geometry: Geometry, *, overwrite: bool = False
) -> Path:
    """Write an image with ``geometry``; floats as float32, integers as they are.

    A trailing RGB axis is written as vector pixels to MHA/MHD/NRRD (RGB to ``.tif``);
    NIfTI refuses it. ``.tif`` takes raster-input images on their pixel grid only.
    """
    p = Path(path)
    check_target(p, overwrite, IMAGE_WRITABLE)
    return _write_atomic(p, _image_dtype(p, np.asarray(image)), geometry, overwrite, colour=True)
