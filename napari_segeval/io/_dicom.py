"""DICOM pixels: decoded by pydicom, else (JPEG lossless, JPEG-LS, 12-bit JPEG) by GDCM
through SimpleITK, checked against the header, modality LUT applied (docs/design.md,
"Reading files").
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from napari_segeval._errors import ReadError
from napari_segeval.io import _dicom_files
from napari_segeval.io._dicom_files import PIXEL_ELEMENTS
from napari_segeval.io._dicom_geometry import (
    PALETTE,
    is_colour,
    n_frames,
    number,
    palette_rgb,
    photometric,
    samples_stored,
)
from napari_segeval.io._dicom_series import Plan, SeriesInfo, choose, scan
from napari_segeval.io._formats import Raw, is_gz_dicom, sniff
from napari_segeval.io._quiet import one_line_errors, quiet


def _transfer_syntax(ds):
    from pydicom.uid import UID, ExplicitVRBigEndian, ExplicitVRLittleEndian, ImplicitVRLittleEndian

    ts = (getattr(ds, "file_meta", None) or {}).get("TransferSyntaxUID")
    if ts:
        return UID(str(ts))
    implicit, little = getattr(ds, "original_encoding", (True, True))  # (None, None): made here
    if implicit or implicit is None:
        return ImplicitVRLittleEndian
    return ExplicitVRBigEndian if little is False else ExplicitVRLittleEndian


def _expected_bytes(ds, frames: int) -> int:
    rows, cols = int(ds.Rows), int(ds.Columns)
    n = rows * cols * samples_stored(ds) * frames
    bits = int(ds.BitsAllocated)
    return (n + 7) // 8 if bits == 1 else n * (bits // 8)


def _header_shape(ds, frames: int) -> str:
    return (
        f"{int(ds.Rows)} x {int(ds.Columns)} pixels x {frames} frame"
        f"{'s' if frames != 1 else ''} of {int(ds.BitsAllocated)} bits"
    )


def _check_header(ds, path: Path) -> None:
    for name in ("Rows", "Columns", "BitsAllocated"):
        value = ds.get(name)
        if number(value, int, 0) <= 0:
            raise ReadError(f"{path}: DICOM header has no valid {name} ({value!r})")
    if int(ds.BitsAllocated) not in (1, 8, 16, 32, 64):
        raise ReadError(f"{path}: BitsAllocated {int(ds.BitsAllocated)} is not supported")


def _pydicom_decodes(ds, ts) -> bool:
    """True when an installed pydicom decoder handles these pixels (Pillow: 8-bit JPEG only)."""
    from pydicom.uid import JPEGExtended12Bit

    try:
        from pydicom.pixels import get_decoder

        decoder = get_decoder(ts)
        if not decoder.is_available:
            return False
    except Exception:  # noqa: BLE001 - unknown syntax: let GDCM try
        return False
    bits = number(ds.get("BitsStored") or ds.BitsAllocated, int, int(ds.BitsAllocated))
    if ts == JPEGExtended12Bit and bits > 8:
        return bool(set(decoder.available_plugins) - {"pillow"})
    return True


def describe_pixels(ds) -> str:
    """How the pixels of ``ds`` are stored and decoded, in one phrase."""
    ts = _transfer_syntax(ds)
    pi = photometric(ds) or "no PhotometricInterpretation"
    colour = " shown as RGB" if pi.startswith("YBR") else ""
    colour = " shown as RGB through its palette" if pi == PALETTE else colour
    by = " (decoded by GDCM)" if ts.is_compressed and not _pydicom_decodes(ds, ts) else ""
    return f"{pi}{colour}, {ts.name}{by}"


def _native(ds, path: Path, frames: int, compressed: bool = False) -> np.ndarray:
    name = next(k for k in PIXEL_ELEMENTS if k in ds)
    have, want = len(ds[name].value), _expected_bytes(ds, frames)
    if not compressed and (have < want or have > want + 1):
        raise ReadError(
            f"{path}: header and pixel data disagree: the header says {_header_shape(ds, frames)} "
            f"({want} bytes) but the pixel data hold {have} bytes"
        )
    with quiet(), one_line_errors(f"{path}: cannot decode DICOM pixel data"):
        return np.asarray(ds.pixel_array)


def _gdcm(ds, path: Path) -> np.ndarray:
    """Decode pixels pydicom cannot (JPEG lossless, JPEG-LS) with GDCM, which applies the LUT."""
    import SimpleITK as sitk

    with quiet(native=True), tempfile.TemporaryDirectory(prefix="segeval-dcm-") as tmp:
        src = path
        if is_gz_dicom(path) or not sniff(path, preamble=True):
            src = Path(tmp) / "image.dcm"
            ds.save_as(src, enforce_file_format=True)
        with one_line_errors(
            f"{path}: cannot decode {_transfer_syntax(ds).name} pixel data with GDCM"
        ):
            reader = sitk.ImageFileReader()
            reader.SetImageIO("GDCMImageIO")
            reader.SetFileName(str(src))
            return sitk.GetArrayFromImage(reader.Execute())


def _with_pixels(header, path: Path):
    """A shallow copy of a scanned header with its pixel data read (dropped again by decode)."""
    import copy

    if not any(k in header for k in PIXEL_ELEMENTS):
        return _dicom_files.load(path, pixels=True)
    ds = copy.copy(header)
    with quiet(), one_line_errors(f"{path}: cannot read DICOM pixel data"):
        for name in PIXEL_ELEMENTS:
            if name in ds:
                _ = ds[name].value
    return ds


def decode(path: Path, ds=None) -> tuple[np.ndarray, bool]:
    """All frames of one object as ``(frames, rows, cols[, 3])`` and whether the
    modality LUT is already applied (GDCM does it)."""
    ds = _dicom_files.load(path, pixels=True) if ds is None else _with_pixels(ds, path)
    _check_header(ds, path)
    try:
        frames = n_frames(ds)
    except ValueError as exc:
        raise ReadError(f"{path}: {exc}") from exc
    ts = _transfer_syntax(ds)
    if ts.is_compressed and not _pydicom_decodes(ds, ts):
        arr, applied = _gdcm(ds, path), True  # GDCM applies the palette too
    else:
        ds.ensure_file_meta()
        ds.file_meta.TransferSyntaxUID = ts
        arr, applied = _native(ds, path, frames, ts.is_compressed), False
        if photometric(ds) == PALETTE:
            arr, applied = palette_rgb(arr, ds, path), True
    colour = is_colour(ds)
    if arr.ndim == (3 if colour else 2):
        arr = arr[None]
    want = (frames, int(ds.Rows), int(ds.Columns))
    if arr.shape[:3] != want:
        raise ReadError(
            f"{path}: header and pixel data disagree: the header says "
            f"{_header_shape(ds, frames)}, the pixel data decode to {arr.shape}"
        )
    for name in PIXEL_ELEMENTS:  # the copy shares the scanned header's elements: drop the bytes
        if name in ds:
            del ds[name]
    return arr, applied


def _apply_lut(arr: np.ndarray, slope: float, intercept: float) -> np.ndarray:
    if slope == 1.0 and intercept == 0.0:
        return arr
    if float(slope).is_integer() and float(intercept).is_integer() and arr.dtype.kind in "iu":
        return arr.astype(np.int64) * int(slope) + int(intercept)
    return (arr.astype(np.float64) * slope + intercept).astype(np.float32)


def _narrow(arr: np.ndarray) -> np.ndarray:
    """Smallest of int16/uint16/int32 (else float64) holding an int64 array after rescaling."""
    lo, hi = (int(arr.min()), int(arr.max())) if arr.size else (0, 0)
    for dt in (np.int16, np.uint16, np.int32):
        if np.iinfo(dt).min <= lo and hi <= np.iinfo(dt).max:
            return arr.astype(dt)
    return arr.astype(np.float64)


def assemble(plan: Plan) -> np.ndarray:
    """Pixel array of a checked stack in the plan's order, modality LUT applied."""
    decoded: dict[Path, tuple[np.ndarray, bool]] = {}
    images = []
    for u in plan.order:
        if u.path not in decoded:
            decoded.clear()  # keep one multi-frame object in memory at a time
            decoded[u.path] = decode(u.path, u.ds)
        arr, applied = decoded[u.path]
        img = arr[u.frame or 0]
        images.append(img if applied else _apply_lut(img, *u.rescale))
    kinds = {a.dtype.kind for a in images}
    if "f" in kinds:
        images = [a.astype(np.float32, copy=False) for a in images]
    out = np.stack(images)
    return _narrow(out) if out.dtype == np.int64 else out


def _to_raw(info: SeriesInfo, where: Path) -> Raw:
    if info.problem:
        raise ReadError(f"{where}: series {info.id} cannot be read: {info.problem}")
    plan = info.plan
    assert plan is not None  # a stack without a problem has its plan
    arr = assemble(plan)
    axes = plan.axes
    if axes == "yx":
        arr = arr[0]
    if arr.ndim == len(axes) + 1:  # colour samples
        axes += "c"
    first, modality = plan.order[0], info.modality or None
    meta = {
        "series_uid": info.uid,
        "series_id": info.id,
        "n_files": info.n_files,
        "pixels": describe_pixels(first.ds),
        **({"dicom_modality": modality} if modality else {}),
        "spacing_source": first.spacing_source,
        **({"dose_units": str(first.ds.DoseUnits)} if first.ds.get("DoseUnits") else {}),
        "warnings": list(plan.warnings),
    }
    return Raw(np.ascontiguousarray(arr), plan.geometry, axes, meta, modality, plan.has_geometry)


def read_dicom(path: str | Path, series: str | None = None) -> Raw:
    """Read a DICOM file, folder or DICOMDIR export (one stack: the largest, or ``series``)."""
    p = Path(path)
    stacks, skipped, broken = scan(p)
    if broken:
        if p.is_file():
            raise ReadError(broken[0])
        n_files = len(broken) + len({u.path for s in stacks for u in s.units})
        raise ReadError(
            f"{p}: {len(broken)} of {n_files} DICOM files "
            f"cannot be read (truncated or corrupt files), e.g. {broken[0]}"
        )
    info = choose(stacks, series, p)
    raw = _to_raw(info, p)
    raw.meta["n_series"] = len(stacks)
    if _dicom_files.dicomdir_of(p) is not None:
        raw.meta["dicomdir"] = True
    if len(stacks) > 1 and series is None:
        others = len(stacks) - 1
        raw.meta["series_note"] = (
            f"{p.name}: opened series {info.id} ({info.n_images} image"
            f"{'s' if info.n_images != 1 else ''}, {info.modality}"
            f"{', ' + repr(info.description) if info.description else ''}), the largest of "
            f"{len(stacks)}; {others} other{'s' if others > 1 else ''} listed by "
            f"'segeval inspect' (choose with --series)"
        )
    if skipped:
        raw.meta["skipped"] = skipped
    return raw
