"""Pixel-grid inputs (no trusted geometry): 2D images (PNG/JPG/BMP through Pillow, TIFF
through tifffile; a palette image's indices in ``meta["palette_indices"]``), videos (PyAV,
the ``video`` extra) and folders of frames (``(t, y, x[, c])`` uint8, ``meta["fps"]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import (
    InvalidImageError,
    MissingDependencyError,
    ReadError,
    WriteError,
)
from napari_segeval.io._formats import Raw, frame_files, suffix
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
    check_pixel_grid(path, geometry)
    if labels.dtype not in (np.uint8, np.uint16):
        raise WriteError(f"{path}: PNG label maps hold ids up to 65535, got {labels.dtype}")


def write_png_labels(path: Path, labels: np.ndarray, geometry: Geometry) -> None:
    """Write a 2D label map as a grey PNG (8-bit, or 16-bit for ids above 255), checked
    first with :func:`check_png_labels`."""
    from PIL import Image

    Image.fromarray(np.ascontiguousarray(labels)).save(path, format="PNG")


def check_pixel_grid(path: Path, geometry: Geometry) -> None:
    """Refuse a physical geometry for PNG or TIFF: only the pixel grid raster inputs get is stored."""
    if not geometry.matches(Geometry.identity(geometry.ndim)):
        what = "PNG" if suffix(path) == ".png" else "TIFF"
        raise WriteError(
            f"{path}: {what} cannot store this geometry ({geometry.describe()}); use .mha or .nii.gz"
        )


def write_tiff(path: Path, array: np.ndarray, geometry: Geometry) -> None:
    """Write TIFF on the pixel grid: ``(y, x, 3)`` as RGB, 3D as pages (read back ``(z, y, x)``)."""
    import tifffile

    rgb = array.ndim == geometry.ndim + 1 and array.shape[-1] == 3
    tifffile.imwrite(
        str(path), np.ascontiguousarray(array), photometric="rgb" if rgb else "minisblack"
    )


#: Largest channel disagreement (grey levels) for a colour frame to count as grey.
GREY_TOLERANCE = 3


def to_grey_if_equal(frames: np.ndarray, tolerance: int = GREY_TOLERANCE) -> np.ndarray:
    """Drop the colour axis of ``(..., 3)`` uint8 frames whose channels agree."""
    c = frames.astype(np.int16)
    spread = (c.max(axis=-1) - c.min(axis=-1)).max()
    if spread > tolerance:
        return frames
    return np.round(c.mean(axis=-1)).astype(np.uint8)


def check_container(path: Path) -> None:
    """Raise :class:`ReadError` when an MP4/MOV box or the AVI RIFF chunk runs past the end."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(12)
        if path.suffix.lower() == ".avi" and head[:4] == b"RIFF" and head[8:12] == b"AVI ":
            if int.from_bytes(head[4:8], "little") + 8 > size:
                raise ReadError(f"{path}: AVI file is truncated ({size} bytes, header says more)")
            return
        if path.suffix.lower() not in (".mp4", ".mov") or head[4:8] != b"ftyp":
            return
        pos = 0
        while pos < size:
            fh.seek(pos)
            box = fh.read(16)
            n = int.from_bytes(box[:4], "big")
            if n == 1 and len(box) == 16:
                n = int.from_bytes(box[8:16], "big")
            elif n == 0:
                n = size - pos
            if n < 8 or pos + n > size:
                raise ReadError(f"{path}: MP4 file is truncated or corrupt (box at byte {pos})")
            pos += n


def read_video(path: Path) -> Raw:
    try:
        import av
    except ImportError as exc:
        raise MissingDependencyError("av", "video", f"Reading the video {path.name}") from exc
    check_container(path)
    with one_line_errors(f"{path}: cannot decode video"), av.open(str(path)) as container:
        if not container.streams.video:
            raise ReadError(f"{path}: no video stream in this file")
        stream = container.streams.video[0]
        declared = int(stream.frames or 0)
        fps = float(stream.average_rate) if stream.average_rate else None
        frames: list[np.ndarray] = []
        for packet in container.demux(stream):
            if packet.is_corrupt:
                raise ReadError(f"{path}: video data is truncated or corrupt")
            frames.extend(f.to_ndarray(format="rgb24") for f in packet.decode())
    if not frames:
        raise ReadError(f"{path}: the video has no decodable frames")
    if declared and len(frames) < declared:
        raise ReadError(
            f"{path}: only {len(frames)} of {declared} frames could be decoded; "
            "the file is truncated or corrupt"
        )
    if len({f.shape for f in frames}) > 1:
        raise ReadError(f"{path}: frame size changes within the video")
    return _clip(to_grey_if_equal(np.stack(frames)), {"fps": fps})


def _clip(arr: np.ndarray, meta: dict) -> Raw:
    axes = "tyx" if arr.ndim == 3 else "tyxc"
    return Raw(arr, Geometry.identity(3), axes, meta=meta, has_geometry=False)


def read_frame_folder(folder: Path) -> Raw:
    """Stack the image frames of ``folder`` (naturally sorted) into a video."""
    files = frame_files(folder)
    if not files:
        raise ReadError(f"{folder}: no PNG/JPG/TIFF/BMP frames in this folder")
    frames: list[np.ndarray] = []
    for f in files:
        raw = read_raster(f)
        if raw.axes not in ("yx", "yxc"):
            raise ReadError(f"{f}: frame is not a 2D image (axes {raw.axes})")
        if frames and raw.array.shape != frames[0].shape:
            raise ReadError(
                f"{f}: frame shape {raw.array.shape} differs from {files[0].name} "
                f"{frames[0].shape}; all frames of {folder} must have one size"
            )
        frames.append(raw.array)
    arr = np.stack(frames)
    if arr.ndim == 4 and arr.dtype == np.uint8:
        lossy = any(f.suffix.lower() in (".jpg", ".jpeg") for f in files)
        arr = to_grey_if_equal(arr, tolerance=GREY_TOLERANCE if lossy else 0)
    return _clip(arr, {"frames": [f.name for f in files], "fps": None})
