"""File-kind detection from names and magic bytes (no heavy imports)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from napari_segeval.io.case import Geometry

NIFTI = (".nii", ".nii.gz")
ITK = (".mha", ".mhd", ".nrrd", ".nhdr")
DICOM = (".dcm", ".dicom")
VIDEO = (".mp4", ".avi", ".mov", ".mkv")
RASTER = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")
WRITABLE = (".nii", ".nii.gz", ".mha", ".mhd", ".nrrd")
FRAME_EXTS = RASTER
#: Suffixes of single files that hold a whole case (volume, video or 2D image):
#: what data-set layouts list as images and labels. DICOM slices are left out
#: (a DICOM series is a folder).
IMAGE_SUFFIXES = NIFTI + ITK + RASTER + VIDEO


def suffix(path: str | Path) -> str:
    """Lower-case extension, with ``.nii.gz`` kept whole.

    Examples
    --------
    >>> suffix("a/CT_001.NII.GZ"), suffix("x.mha"), suffix("folder")
    ('.nii.gz', '.mha', '')
    """
    name = Path(path).name.lower()
    if name.endswith(".nii.gz"):
        return ".nii.gz"
    return Path(name).suffix


def stem(path: str | Path) -> str:
    """File name without the (possibly double) extension.

    Examples
    --------
    >>> stem("liver_3.nii.gz")
    'liver_3'
    """
    name = Path(path).name
    return name[: len(name) - len(suffix(name))] if suffix(name) else name


def natural_key(name: str) -> list:
    """Sort key that orders ``frame2`` before ``frame10``.

    Examples
    --------
    >>> sorted(["f10.png", "f2.png", "f1.png"], key=natural_key)
    ['f1.png', 'f2.png', 'f10.png']
    """
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def is_dicom_file(path: str | Path) -> bool:
    """True when the file carries the DICOM ``DICM`` marker at byte 128."""
    try:
        with open(path, "rb") as fh:
            fh.seek(128)
            return fh.read(4) == b"DICM"
    except OSError:
        return False


def frame_files(folder: Path) -> list[Path]:
    """Image frames (PNG/JPG/TIFF/BMP) directly in ``folder``, naturally sorted."""
    files = [p for p in folder.iterdir() if p.is_file() and suffix(p) in FRAME_EXTS]
    return sorted(files, key=lambda p: natural_key(p.name))


def folder_kind(folder: Path) -> str | None:
    """``"dicom"``, ``"frames"`` or None for a folder we cannot read."""
    try:
        files = [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return None
    if any(suffix(p) in DICOM or (not p.suffix and is_dicom_file(p)) for p in files[:2000]):
        return "dicom"
    if any(suffix(p) in FRAME_EXTS for p in files):
        return "frames"
    return None


def kind(path: str | Path) -> str | None:
    """Reader family for ``path``: nifti, itk, dicom, video, raster, dicom-folder, frames.

    Examples
    --------
    >>> kind("a.nii.gz"), kind("b.nrrd"), kind("c.mp4"), kind("d.txt")
    ('nifti', 'itk', 'video', None)
    """
    p = Path(path)
    if p.is_dir():
        k = folder_kind(p)
        return {"dicom": "dicom-folder", "frames": "frames"}.get(k) if k else None
    ext = suffix(p)
    if ext in NIFTI:
        return "nifti"
    if ext in ITK:
        return "itk"
    if ext in DICOM:
        return "dicom"
    if ext in VIDEO:
        return "video"
    if ext in RASTER:
        return "raster"
    if ext == "" and p.is_file() and is_dicom_file(p):
        return "dicom"
    return None


@dataclass
class Raw:
    """What a format backend read, before modality and label handling."""

    array: np.ndarray
    geometry: Geometry
    axes: str
    meta: dict = field(default_factory=dict)
    modality: str | None = None  # from the file itself (DICOM tag)
    has_geometry: bool = True  # False for PNG/JPG/TIFF/video: pixel units only
