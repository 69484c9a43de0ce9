"""Writing label maps and images with their source geometry, atomically.

The extension picks the format: NIfTI (RAS affine in qform and sform), MHA/NRRD/MHD
through SimpleITK, ``.png`` label maps and ``.tif`` (pixel grid only). Files are
written through :func:`napari_segeval._atomic.atomic_path`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from napari_segeval._atomic import atomic_path
from napari_segeval._errors import SegEvalError, WriteError
from napari_segeval.io._formats import WRITABLE, suffix
from napari_segeval.io._quiet import reason
from napari_segeval.io._validate import as_labels
from napari_segeval.io.case import Geometry

#: TIFF holds label maps and images of raster inputs (pixel grid).
TIFF = (".tif", ".tiff")
#: Label maps can also be written as PNG (2D, pixel grid) or TIFF.
LABEL_WRITABLE = (*WRITABLE, ".png", *TIFF)
#: Images: the geometry formats, and TIFF for raster inputs.
IMAGE_WRITABLE = (*WRITABLE, *TIFF)


def _check_target(path: Path, overwrite: bool, formats: tuple[str, ...] = WRITABLE) -> None:
    if suffix(path) not in formats:
        raise WriteError(f"{path}: cannot write this format (use one of {', '.join(formats)})")
    if not path.parent.is_dir():
        raise WriteError(f"{path}: folder {path.parent} does not exist")
    if not overwrite and path.exists():
        raise WriteError(f"{path}: file exists; pass overwrite=True to replace it")


def _write_atomic(
    path: Path, array: np.ndarray, geometry: Geometry, compress: bool, overwrite: bool
) -> Path:
    ext = suffix(path)
    try:
        with atomic_path(path, overwrite=overwrite) as tmp:
            if ext in (".nii", ".nii.gz"):
                from napari_segeval.io._nifti import write_nifti

                write_nifti(tmp, array, geometry)
            elif ext == ".png":
                from napari_segeval.io._raster import write_png_labels

                write_png_labels(tmp, array, geometry)
            elif ext in TIFF:
                from napari_segeval.io._raster import write_tiff

                write_tiff(tmp, array, geometry)
            else:
                from napari_segeval.io._sitk import write_itk

                write_itk(tmp, array, geometry, compress)
    except SegEvalError:
        raise
    except Exception as exc:
        raise WriteError(f"{path}: cannot write ({reason(exc)})") from exc
    return path


def _check_grid(path: Path, array: np.ndarray, geometry: Geometry, colour_ok: bool) -> None:
    extra = array.ndim - geometry.ndim
    if extra not in ((0, 1) if colour_ok else (0,)) or (extra == 1 and array.shape[-1] != 3):
        raise WriteError(
            f"{path}: array of shape {array.shape} does not fit a {geometry.ndim}D geometry"
        )
    if suffix(path) in TIFF:
        from napari_segeval.io._raster import check_tiff

        check_tiff(path, geometry)


def write_labels(
    path: str | Path, labels: np.ndarray, geometry: Geometry, *, overwrite: bool = False
) -> Path:
    """Write an integer label map with ``geometry`` (the source image's), smallest uint type.

    ``.png`` takes 2D maps on a pixel grid only.
    """
    p = Path(path)
    _check_target(p, overwrite, LABEL_WRITABLE)
    arr = as_labels(np.asarray(labels), p)
    _check_grid(p, arr, geometry, colour_ok=False)
    if suffix(p) == ".png":
        from napari_segeval.io._raster import check_png_labels

        check_png_labels(p, arr, geometry)
    return _write_atomic(p, arr, geometry, compress=True, overwrite=overwrite)


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
    _check_target(p, overwrite, IMAGE_WRITABLE)
    arr = _image_dtype(p, np.asarray(image))
    _check_grid(p, arr, geometry, colour_ok=True)
    return _write_atomic(p, arr, geometry, compress=True, overwrite=overwrite)
