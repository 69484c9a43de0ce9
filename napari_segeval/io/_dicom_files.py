"""Finding DICOM files (folders, DICOMDIR, gzip, no preamble) and reading their headers."""

from __future__ import annotations

import io
from pathlib import Path

from napari_segeval._errors import ReadError
from napari_segeval.io._formats import DICOM_LIKE, is_gz_dicom, sniff, suffix
from napari_segeval.io._gzip import gunzip
from napari_segeval.io._quiet import one_line_errors, quiet

#: Elements that hold an image's pixels.
PIXEL_ELEMENTS = ("PixelData", "FloatPixelData", "DoubleFloatPixelData")

#: DICOM objects that carry no image on a grid, by Modality.
NOT_IMAGES = {
    "RTSTRUCT": "an RT structure set (contours)",
    "RTPLAN": "an RT plan",
    "RTRECORD": "an RT treatment record",
    "SR": "a structured report",
    "PR": "a presentation state",
    "KO": "a key object selection",
    "REG": "a registration",
    "DOC": "an encapsulated document",
}


def load(path: Path, pixels: bool = False):
    """Parse a DICOM file (also gzipped or without preamble); pixels deferred unless ``pixels``;
    :class:`ReadError` for a file that is not DICOM or cannot be parsed."""
    import pydicom

    notes: list[str] = []
    with quiet(notes), one_line_errors(f"{path}: cannot read DICOM file"):
        gz = is_gz_dicom(path)
        src = io.BytesIO(gunzip(path.read_bytes())) if gz else path
        defer = None if pixels or gz else 4096
        ds = pydicom.dcmread(src, force=True, defer_size=defer)
        if pixels and "PixelData" in ds:
            _ = ds.PixelData  # parse now, inside quiet()
    if not any(k in ds for k in ("SOPClassUID", "Rows", "Modality", "DirectoryRecordSequence")):
        if notes:  # e.g. compressed pixel data cut short: pydicom keeps no element
            raise ReadError(f"{path}: DICOM file is truncated or corrupt ({notes[0]})")
        raise ReadError(f"{path}: not a DICOM file (no DICOM header found)")
    return ds


def dicomdir_of(path: Path) -> Path | None:
    """The DICOMDIR file ``path`` is or holds, if any."""
    if path.is_file() and path.name.upper() == "DICOMDIR":
        return path
    found = [path / n for n in ("DICOMDIR", "dicomdir") if path.is_dir() and (path / n).is_file()]
    return found[0] if found else None


def _dicomdir_files(dicomdir: Path) -> list[Path]:
    ds = load(dicomdir)
    records = ds.get("DirectoryRecordSequence")
    if records is None:
        raise ReadError(f"{dicomdir}: DICOMDIR has no directory records")
    files = []
    for rec in records:
        ref = rec.get("ReferencedFileID")
        if ref is None:
            continue
        parts = [ref] if isinstance(ref, str) else list(ref)
        files.append(dicomdir.parent.joinpath(*[str(x) for x in parts]))
    if not files:
        raise ReadError(f"{dicomdir}: DICOMDIR references no files")
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise ReadError(
            f"{dicomdir}: {len(missing)} of {len(files)} files it references are "
            f"missing (e.g. {missing[0]})"
        )
    return files


def candidates(path: Path) -> list[Path]:
    """DICOM files to consider for ``path`` (a file, a folder or a DICOMDIR)."""
    dicomdir = dicomdir_of(path)
    if dicomdir is not None:
        return _dicomdir_files(dicomdir)
    if path.is_file():
        return [path]
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.upper() != "DICOMDIR")
    return [p for p in files if suffix(p) in DICOM_LIKE or sniff(p)]


def find(path: Path) -> tuple[list, list[str], list[str]]:
    """Parse the header of every DICOM file for ``path`` (see :func:`candidates`): the
    ``(path, dataset)`` of image objects, and one line per non-image object and unreadable file."""
    headers, skipped, broken = [], [], []
    for f in candidates(path):
        try:
            ds = load(f)
        except ReadError as exc:
            broken.append(str(exc))
            continue
        if any(k in ds for k in PIXEL_ELEMENTS):
            headers.append((f, ds))
        else:
            skipped.append(f"{f.name}: {not_image_reason(ds)}")
    return headers, skipped, broken


def not_image_reason(ds) -> str:
    """Why a parsed DICOM object without pixel data is not an image (one line)."""
    modality = str(ds.get("Modality", "") or "").strip().upper()
    what = NOT_IMAGES.get(modality)
    if what:
        return f"DICOM {modality} is {what}, not an image on a grid"
    return "DICOM object has no pixel data (not an image)"
