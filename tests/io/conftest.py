"""File factories for the io tests: every test file is generated in tmp_path."""

from __future__ import annotations

import contextlib
import locale
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for dicom_factory
from dicom_factory import (
    gdcm_jpeg_lossless,
    jpeg12_expected,
    jpeg12_file,
    palette_tags,
    pydicom_file,
    pydicom_series,
    ybr_full_422,
)


def nifti(path: Path, data: np.ndarray, affine: np.ndarray) -> Path:
    """Write ``data`` in nibabel (i, j, k) order with a RAS ``affine``."""
    import nibabel as nib

    img = nib.Nifti1Image(data, affine)
    img.set_sform(affine, code=1)
    img.set_qform(affine, code=1)
    nib.save(img, str(path))
    return path


def sitk_file(path: Path, array: np.ndarray, spacing=None, origin=None, vector=False) -> Path:
    """Write ``array`` (slowest axis first) with SimpleITK; spacing in array order."""
    import SimpleITK as sitk

    img = sitk.GetImageFromArray(array, isVector=vector)
    if spacing is not None:
        img.SetSpacing(tuple(float(s) for s in spacing[::-1]))
    if origin is not None:
        img.SetOrigin(tuple(float(o) for o in origin))
    sitk.WriteImage(img, str(path))
    return path


@contextlib.contextmanager
def _keep_locale():
    """GDCM's DICOM writer sets the C locale to "C" (then Python reads text as ASCII)."""
    saved = locale.setlocale(locale.LC_ALL)
    try:
        yield
    finally:
        locale.setlocale(locale.LC_ALL, saved)


def dicom_series(
    folder: Path,
    volume: np.ndarray,
    spacing=(2.5, 0.7, 0.7),
    origin=(-10.0, 20.0, 30.0),
    modality="CT",
    series_uid="1.2.826.0.1.3680043.2.1125.1",
    prefix="slice",
) -> Path:
    """Write a (z, y, x) int16 volume as one DICOM file per slice with proper tags."""
    import SimpleITK as sitk

    folder.mkdir(parents=True, exist_ok=True)
    writer = sitk.ImageFileWriter()
    writer.KeepOriginalImageUIDOn()
    for k in range(volume.shape[0]):
        sl = sitk.GetImageFromArray(volume[k])
        sl.SetSpacing((spacing[2], spacing[1]))
        position = (origin[0], origin[1], origin[2] + k * spacing[0])
        tags = {
            "0008|0060": modality,
            "0020|000d": "1.2.826.0.1.3680043.2.1125.9",
            "0020|000e": series_uid,
            "0008|0018": f"{series_uid}.{k + 1}",
            "0020|0013": str(k + 1),
            "0020|0032": "\\".join(f"{v:g}" for v in position),
            "0020|0037": "1\\0\\0\\0\\1\\0",
            "0018|0050": f"{spacing[0]:g}",
            "0028|0030": f"{spacing[1]:g}\\{spacing[2]:g}",
            "0008|0016": "1.2.840.10008.5.1.4.1.1.2",
        }
        for key, value in tags.items():
            sl.SetMetaData(key, value)
        writer.SetFileName(str(folder / f"{prefix}{k:03d}.dcm"))
        with _keep_locale():
            writer.Execute(sl)
    return folder


def multiframe_dicom(path: Path, frames: np.ndarray, modality="US") -> Path:
    """Write (t, y, x) uint8 frames as one multi-frame DICOM file."""
    import SimpleITK as sitk

    img = sitk.GetImageFromArray(frames)
    img.SetMetaData("0008|0060", modality)
    writer = sitk.ImageFileWriter()
    writer.KeepOriginalImageUIDOn()
    writer.SetFileName(str(path))
    with _keep_locale():
        writer.Execute(img)
    return path


def video(path: Path, frames: np.ndarray, fps: int = 10, codec: str = "mpeg4") -> Path:
    """Encode (t, y, x, 3) uint8 frames with PyAV."""
    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "yuv420p"
        stream.options = {"qscale": "1"} if codec == "mpeg4" else {}
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def png(path: Path, array: np.ndarray, **kw) -> Path:
    from PIL import Image

    Image.fromarray(array).save(path, **kw)
    return path


def blocks(t: int = 4, h: int = 32, w: int = 48) -> np.ndarray:
    """Colour video frames with large flat blocks (survive lossy coding)."""
    f = np.zeros((t, h, w, 3), np.uint8)
    for i in range(t):
        f[i, :, : w // 2] = (200, 40, 40)
        f[i, :, w // 2 :] = (30, 30 + 20 * i, 180)
    return f


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture
def make():
    """Namespace of the file factories above (conftest modules are not importable)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        nifti=nifti,
        sitk_file=sitk_file,
        dicom_series=dicom_series,
        multiframe_dicom=multiframe_dicom,
        video=video,
        png=png,
        blocks=blocks,
        pydicom_file=pydicom_file,
        pydicom_series=pydicom_series,
        palette_tags=palette_tags,
        ybr_full_422=ybr_full_422,
        gdcm_jpeg_lossless=gdcm_jpeg_lossless,
        jpeg12_file=jpeg12_file,
        jpeg12_expected=jpeg12_expected,
    )
