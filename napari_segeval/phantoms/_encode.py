"""Deterministic encoders of the sample files: gzip with ``mtime=0``, PNG without
metadata, uncompressed MetaImage, MP4 with ``bitexact`` flags and one thread.
"""

from __future__ import annotations

import gzip
import io
import tempfile
from pathlib import Path

import numpy as np

from napari_segeval._errors import MissingDependencyError
from napari_segeval.io._nifti import nifti_image
from napari_segeval.io._sitk import write_itk
from napari_segeval.io.case import Geometry

#: Codec of the sample video. MPEG-4 part 2 rather than H.264: the libx264 in PyAV's
#: wheels gave different bytes from run to run in one process even with threads=1 and
#: bitexact flags, while mpeg4 with these options is reproducible.
VIDEO_CODEC = "mpeg4"
#: Encoder settings of the sample video (fixed for reproducible bytes).
VIDEO_OPTIONS: dict[str, str] = {
    "flags": "+bitexact+qscale",
    "global_quality": str(3 * 118),
    "threads": "1",
}  # q 3


def nifti_gz_bytes(array: np.ndarray, geometry: Geometry, descrip: str = "") -> bytes:
    """Gzipped NIfTI-1 bytes of a ``(z, y, x)`` (or ``(t, y, x)``) array as
    :func:`~napari_segeval.io._nifti.nifti_image` makes it, with ``descrip``."""
    if array.ndim != 3 or geometry.ndim != 3:
        raise ValueError(f"NIfTI samples are 3D, got an array of shape {array.shape}")
    img = nifti_image(array, geometry)
    img.header["descrip"] = descrip.encode("ascii")[:79]
    return gzip.compress(img.to_bytes(), compresslevel=9, mtime=0)


def png_bytes(array: np.ndarray) -> bytes:
    """PNG bytes (no metadata, fixed compression) of a ``uint8`` grey or RGB image."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(array)).save(buf, format="PNG", compress_level=9)
    return buf.getvalue()


def metaimage_files(array: np.ndarray, spacing: tuple[float, ...], name: str) -> dict[str, bytes]:
    """Uncompressed MetaImage ``name.mhd`` + ``name.raw`` bytes; ``spacing`` slowest axis first."""
    with tempfile.TemporaryDirectory() as tmp:
        write_itk(Path(tmp) / f"{name}.mhd", array, Geometry.identity(array.ndim, spacing), False)
        return {f"{name}{e}": (Path(tmp) / f"{name}{e}").read_bytes() for e in (".mhd", ".raw")}


def _av():
    try:
        import av
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise MissingDependencyError("av", "video", "writing the sample video") from exc
    return av


def mp4_bytes(frames: np.ndarray, fps: int) -> bytes:
    """MP4 (:data:`VIDEO_CODEC`, yuv420p) bytes of ``(t, y, x)`` grey ``uint8`` frames."""
    av = _av()
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4", options={"fflags": "+bitexact"}) as container:
        stream = container.add_stream(VIDEO_CODEC, rate=int(fps))
        stream.width, stream.height = int(frames.shape[2]), int(frames.shape[1])
        stream.pix_fmt = "yuv420p"
        stream.options = dict(VIDEO_OPTIONS)
        stream.thread_count = 1
        for k, frame in enumerate(frames):
            vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="gray")
            vf = vf.reformat(format="yuv420p")
            vf.pts = k
            container.mux(stream.encode(vf))
        container.mux(stream.encode())  # flush
    return buf.getvalue()


def decode_mp4_grey(data: bytes) -> np.ndarray:
    """Decode MP4 bytes to ``(t, y, x)`` grey ``uint8`` frames."""
    av = _av()
    with av.open(io.BytesIO(data)) as container:
        return np.stack([f.to_ndarray(format="gray") for f in container.decode(video=0)])
