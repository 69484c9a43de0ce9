"""Single 2D images: PNG/JPG/BMP through Pillow, TIFF through tifffile; no trusted
geometry, colour as ``"yxc"`` RGB, a palette image's indices in ``meta["palette_indices"]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidImageError, ReadError, WriteError
from napari_segeval.io._formats import Raw, suffix
from napari_segeval.io._quiet import one_line_errors
from napari_segeval.io.case import Geometry

_GREY_MODES = {"L", "I", "I;16", "I;16B", "I;16L", "F"}
_PNG_END = b"IEND\xaeB`\x82"


def _read_pil(path: Path) -> tuple[np.ndarray, dict]:
    from PIL import Image

    meta: dict = {}
    if suffix(path) == ".png":
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - 8))
            if fh.read() != _PNG_END:
                raise ReadError(f"{path}: PNG file is truncated (no IEND chunk at the end)")
    with one_line_errors(f"{path}: cannot read image"), Image.open(path) as im:
        im.load()
        mode = im.mode
        if mode == "P":
            meta["palette_indices"] = np.array(im)
            im = im.convert("RGBA" if "transparency" in im.info else "RGB")
        elif mode == "1":
            return np.array(im).astype(np.uint8), meta
        elif mode == "LA":
            im = im.convert("L")
        elif mode not in _GREY_MODES | {"RGB", "RGBA"}:
            im = im.convert("RGB")
        return np.array(im), meta


def read_raster(path: Path) -> Raw:
    """Read a PNG/JPG/BMP/TIFF image (TIFF stacks become ``"zyx"`` volumes)."""
    meta: dict[str, Any] = {}
    if suffix(path) in (".tif", ".tiff"):
        import tifffile

        with one_line_errors(f"{path}: cannot read TIFF"):
            arr = np.asarray(tifffile.imread(str(path)))
    else:
        arr, meta = _read_pil(path)
    if arr.ndim == 3 and arr.shape[-1] in (3, 4):
        arr, axes = arr[..., :3], "yxc"
    elif arr.ndim in (2, 3):
        axes = "yx" if arr.ndim == 2 else "zyx"
    else:
        raise InvalidImageError(
            f"{path}: unsupported image dimensionality {arr.ndim}D with shape {arr.shape}"
        )
    g = Geometry.identity(len(axes.rstrip("c")))
    return Raw(np.ascontiguousarray(arr), g, axes, meta, has_geometry=False)


def check_png_labels(path: Path, labels: np.ndarray, geometry: Geometry) -> None:
    """Refuse label maps a PNG cannot hold: not 2D, ids above 65535, or a physical geometry."""
    if labels.ndim != 2:
        raise WriteError(
            f"{path}: PNG holds 2D label maps only, got shape {labels.shape}; use .nii.gz or .mha"
        )
    if not geometry.matches(Geometry.identity(2)):
        raise WriteError(
            f"{path}: PNG cannot store this geometry ({geometry.describe()}); use .mha or .nii.gz"
        )
    if labels.dtype not in (np.uint8, np.uint16):
        raise WriteError(f"{path}: PNG label maps hold ids up to 65535, got {labels.dtype}")


def write_png_labels(path: Path, labels: np.ndarray, geometry: Geometry) -> None:
    """Write a 2D label map as a grey PNG (8-bit, or 16-bit for ids above 255), checked
    first with :func:`check_png_labels`."""
    from PIL import Image

    Image.fromarray(np.ascontiguousarray(labels)).save(path, format="PNG")


def check_tiff(path: Path, geometry: Geometry) -> None:
    """Refuse a physical geometry for TIFF: only the pixel grid raster inputs get is stored."""
    if not geometry.matches(Geometry.identity(geometry.ndim)):
        raise WriteError(
            f"{path}: TIFF cannot store this geometry ({geometry.describe()}); use .mha or .nii.gz"
        )


def write_tiff(path: Path, array: np.ndarray, geometry: Geometry) -> None:
    """Write TIFF on the pixel grid: ``(y, x, 3)`` as RGB, 3D as pages (read back ``(z, y, x)``)."""
    import tifffile

    rgb = array.ndim == geometry.ndim + 1 and array.shape[-1] == 3
    tifffile.imwrite(
        str(path), np.ascontiguousarray(array), photometric="rgb" if rgb else "minisblack"
    )
