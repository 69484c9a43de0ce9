"""File-kind detection from names and magic bytes (no heavy imports)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from napari_segeval.io.case import Geometry

NIFTI = (".nii", ".nii.gz")
ITK = (".mha", ".mhd", ".nrrd", ".nhdr")
VIDEO = (".mp4", ".avi", ".mov", ".mkv")
RASTER = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")
WRITABLE = (".nii", ".nii.gz", ".mha", ".mhd", ".nrrd")
#: Read through SimpleITK only: Analyze 7.5 (.hdr + .img) and MINC2.
ITK_READ_ONLY = (".hdr", ".mnc")
#: Gzipped DICOM names.
DICOM_GZ = (".dcm.gz", ".dicom.gz")
#: DICOM names, gzipped DICOM included.
DICOM_LIKE = (".dcm", ".dicom", *DICOM_GZ)
#: Suffixes of single files that hold a whole case (volume, video or 2D image):
#: what data-set layouts list as images and labels. DICOM slices are left out
#: (a DICOM series is a folder).
IMAGE_SUFFIXES = NIFTI + ITK + ITK_READ_ONLY + RASTER + VIDEO
#: Every suffix a reader takes (an Analyze ``.img`` beside its ``.hdr`` included).
SUPPORTED = NIFTI + ITK + ITK_READ_ONLY + (".img",) + DICOM_LIKE + VIDEO + RASTER


def suffix(path: str | Path) -> str:
    """Lower-case extension, with ``.nii.gz`` kept whole."""
    name = Path(path).name.lower()
    for double in (".nii.gz", *DICOM_GZ):
        if name.endswith(double):
            return double
    return Path(name).suffix


def stem(path: str | Path) -> str:
    """File name without the (possibly double) extension."""
    name = Path(path).name
    return name[: len(name) - len(suffix(name))] if suffix(name) else name


def output_formats(source: str | Path, axes: str) -> tuple[str, str]:
    """``(label map suffix, float image suffix)`` of the files every command saves beside a
    case read from ``source`` (PNG/JPG/BMP: ``.png`` labels, ``.tif`` float images)."""
    ext = suffix(source)
    if axes.startswith("t"):
        return ".mha", ".mha"
    if ext in NIFTI:
        return ".nii.gz", ".nii.gz"
    if ext in (".tif", ".tiff"):
        return ".tif", ".tif"
    if ext in RASTER:
        return (".png", ".tif") if axes in ("yx", "yxc") else (".tif", ".tif")
    return ".mha", ".mha"


def natural_key(name: str) -> list:
    """Sort key that orders ``frame2`` before ``frame10``."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def frame_files(folder: Path) -> list[Path]:
    """Image frames (PNG/JPG/TIFF/BMP) directly in ``folder``, naturally sorted."""
    files = [p for p in folder.iterdir() if p.is_file() and suffix(p) in RASTER]
    return sorted(files, key=lambda p: natural_key(p.name))


def is_gz_dicom(path: str | Path) -> bool:
    return suffix(path) in DICOM_GZ


def _no_preamble(head: bytes) -> bool:
    if len(head) < 8 or head[0:2] not in (b"\x02\x00", b"\x08\x00"):
        return False
    if int.from_bytes(head[2:4], "little") > 0x0120:
        return False
    vr = head[4:6]
    if vr.isalpha() and vr.isupper():
        return True
    return 0 < int.from_bytes(head[4:8], "little") < 4096  # implicit VR: a length


def sniff(path: str | Path, preamble: bool = False) -> bool:
    """True when ``path`` looks like a DICOM file (marker, preamble-less start, or .dcm.gz);
    with ``preamble``, only when it has the ``DICM`` marker at byte 128.
    """
    p = Path(path)
    if is_gz_dicom(p) and not preamble:
        return p.is_file()
    try:
        with open(p, "rb") as fh:
            head = fh.read(132)
    except OSError:
        return False
    return head[128:132] == b"DICM" or (not preamble and _no_preamble(head))


def folder_kind(folder: Path) -> str | None:
    """``"dicom"``, ``"frames"`` or None for a folder we cannot read."""
    try:
        files = [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return None
    if any(p.name.upper() == "DICOMDIR" for p in files) or any(
        suffix(p) in DICOM_LIKE or (suffix(p) not in RASTER and sniff(p)) for p in files[:2000]
    ):
        return "dicom"
    if any(suffix(p) in RASTER for p in files):
        return "frames"
    return None


def analyze_header(img: Path) -> Path | None:
    """The ``.hdr`` (or ``.HDR``) beside an Analyze 7.5 or NIfTI-pair ``.img`` (None: none)."""
    return next(
        (h for h in (img.with_suffix(".hdr"), img.with_suffix(".HDR")) if h.is_file()), None
    )


def kind(path: str | Path) -> str | None:
    """Reader family for ``path``: nifti, itk, dicom (a file, folder or DICOMDIR), video,
    raster, frames."""
    p = Path(path)
    if p.is_dir():
        return folder_kind(p)
    ext = suffix(p)
    if ext == ".img" and analyze_header(p) is not None:
        return "itk"  # the data half of an Analyze 7.5 / NIfTI pair
    if p.name.upper() == "DICOMDIR":
        return "dicom"
    return _KINDS.get(ext) or ("dicom" if p.is_file() and sniff(p) else None)


#: Reader family of each suffix (:func:`kind`).
_KINDS = {
    **dict.fromkeys(NIFTI, "nifti"),
    **dict.fromkeys(ITK + ITK_READ_ONLY, "itk"),
    **dict.fromkeys(DICOM_LIKE, "dicom"),
    **dict.fromkeys(VIDEO, "video"),
    **dict.fromkeys(RASTER, "raster"),
}


@dataclass
class Raw:
    """What a format backend read, before modality and label handling."""

    array: np.ndarray
    geometry: Geometry
    axes: str
    meta: dict = field(default_factory=dict)
    modality: str | None = None  # from the file itself (DICOM tag)
    has_geometry: bool = True  # False for PNG/JPG/TIFF/video: pixel units only
