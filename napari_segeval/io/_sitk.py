"""MetaImage (.mha/.mhd), NRRD and DICOM through SimpleITK (imported lazily).

2D+t MetaImage rule (CAMUS): a 3D grey MetaImage is read as a sequence with axes
``"tyx"`` when its file name contains ``"sequence"`` (case-insensitive), or when its
pixels are 8-bit unsigned, its slowest-axis spacing is exactly 1 and both in-plane
spacings are below 0.5 mm (ultrasound-fine pixels with a unit frame step, as CAMUS
writes them). Everything else 3D is a ``"zyx"`` volume.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from napari_segeval._errors import InvalidImageError, ReadError, SegEvalError
from napari_segeval.io._formats import Raw, is_dicom_file, suffix
from napari_segeval.io.case import Geometry

MODALITY_TAG = "0008|0060"
SERIES_UID_TAG = "0020|000e"
#: DICOM modalities whose multi-frame files are time series rather than volumes.
_TIME_MODALITIES = {"US", "ES", "XA", "RF", "XC", "DMS"}


def _fail(path: Path, what: str, exc: Exception) -> ReadError:
    msg = str(exc).strip().splitlines()
    detail = msg[-1] if msg else type(exc).__name__
    return ReadError(f"{path}: cannot read {what} ({detail})")


def geometry_of(img) -> Geometry:
    """Geometry of a SimpleITK image (spacing reversed to array order)."""
    return Geometry(img.GetSpacing()[::-1], img.GetOrigin(), img.GetDirection())


def _sub_geometry(g: Geometry, n: int) -> Geometry:
    d = g.direction_matrix[:n, :n]
    return Geometry(g.spacing[-n:], g.origin[:n], tuple(d.ravel()))


def _is_sequence(path: Path, arr: np.ndarray, g: Geometry) -> bool:
    if suffix(path) not in (".mha", ".mhd") or arr.ndim != 3:
        return False
    if "sequence" in path.name.lower():
        return True
    return arr.dtype == np.uint8 and g.spacing[0] == 1.0 and max(g.spacing[1:]) < 0.5


def to_raw(img, path: Path, modality: str | None = None, squeeze_single: bool = False) -> Raw:
    """Convert a SimpleITK image to :class:`Raw`, choosing axes from dimension and pixels."""
    import SimpleITK as sitk

    arr = sitk.GetArrayFromImage(img)
    g = geometry_of(img)
    ncomp = img.GetNumberOfComponentsPerPixel()
    dim = img.GetDimension()
    if dim == 4 and arr.shape[0] == 1:
        arr, g, dim = arr[0], _sub_geometry(g, 3), 3
    if dim == 3 and squeeze_single and arr.shape[0] == 1:
        arr, g, dim = arr[0], _sub_geometry(g, 2), 2
    if ncomp not in (1, 3, 4) or dim not in (2, 3):
        raise InvalidImageError(
            f"{path}: unsupported image: {dim}D with {ncomp} components per pixel "
            f"(size {img.GetSize()}); expected a 2D or 3D grey image or 2D/2D+t colour"
        )
    if ncomp > 1:
        return Raw(arr[..., :3], g, "yxc" if dim == 2 else "tyxc", modality=modality)
    if dim == 2:
        return Raw(arr, g, "yx", modality=modality)
    time_like = modality in _TIME_MODALITIES or _is_sequence(path, arr, g)
    return Raw(arr, g, "tyx" if time_like else "zyx", modality=modality)


def check_nrrd_payload(path: Path) -> None:
    """Fully decompress a gzip-encoded attached NRRD payload (ITK ignores a cut trailer)."""
    import gzip
    import zlib

    data = path.read_bytes()
    end = data.find(b"\n\n")
    if end < 0 or not data.startswith(b"NRRD"):
        return
    header = data[:end].decode("latin-1").lower()
    if any(line.startswith("data file") for line in header.splitlines()):
        return
    if any(line.replace(" ", "") in ("encoding:gzip", "encoding:gz") for line in header.splitlines()):
        try:
            gzip.decompress(data[end + 2 :])
        except (OSError, EOFError, zlib.error) as exc:
            raise ReadError(f"{path}: NRRD data is truncated or corrupt ({exc})") from exc


def read_itk_file(path: Path) -> Raw:
    """Read a MetaImage, NRRD or single DICOM file (possibly multi-frame)."""
    import SimpleITK as sitk

    if suffix(path) == ".nrrd":
        check_nrrd_payload(path)

    is_dicom = suffix(path) in (".dcm", ".dicom") or not path.suffix
    if is_dicom and not is_dicom_file(path):
        raise ReadError(f"{path}: not a DICOM file (no 'DICM' marker at byte 128)")
    try:
        reader = sitk.ImageFileReader()
        reader.SetFileName(str(path))
        if is_dicom:
            reader.SetImageIO("GDCMImageIO")
        img = reader.Execute()
        modality = None
        if is_dicom and reader.HasMetaDataKey(MODALITY_TAG):
            modality = reader.GetMetaData(MODALITY_TAG).strip() or None
    except Exception as exc:
        raise _fail(path, "DICOM file" if is_dicom else "image file", exc) from exc
    raw = to_raw(img, path, modality, squeeze_single=is_dicom)
    if modality:
        raw.meta["dicom_modality"] = modality
    return raw


def read_dicom_folder(folder: Path) -> Raw:
    """Read the largest DICOM series in ``folder`` (by number of files)."""
    import SimpleITK as sitk

    try:
        reader = sitk.ImageSeriesReader()
        ids = reader.GetGDCMSeriesIDs(str(folder))
        if not ids:
            raise ReadError(f"{folder}: no DICOM series found in this folder")
        files = {uid: reader.GetGDCMSeriesFileNames(str(folder), uid) for uid in ids}
        uid = max(ids, key=lambda u: len(files[u]))
        if len(files[uid]) == 1:
            raw = read_itk_file(Path(files[uid][0]))
            raw.meta.update(series_uid=uid, n_series=len(ids), n_files=1)
            return raw
        reader.SetFileNames(files[uid])
        reader.MetaDataDictionaryArrayUpdateOn()
        img = reader.Execute()
        modality = None
        if reader.HasMetaDataKey(0, MODALITY_TAG):
            modality = reader.GetMetaData(0, MODALITY_TAG).strip() or None
    except SegEvalError:
        raise
    except Exception as exc:
        raise _fail(folder, "DICOM series", exc) from exc
    _check_series(folder, reader, img, sum(len(f) for f in files.values()))
    if img.GetDimension() == 3 and img.GetSize()[2] != len(files[uid]):
        raise ReadError(
            f"{folder}: DICOM series {uid} has {len(files[uid])} files but "
            f"{img.GetSize()[2]} slices were read; the series is incomplete or corrupt"
        )
    raw = to_raw(img, folder, None)  # a series is spatial: slices, not frames
    raw.modality = modality
    raw.meta.update(series_uid=uid, n_series=len(ids), n_files=len(files[uid]))
    if modality:
        raw.meta["dicom_modality"] = modality
    return raw


def _check_series(folder: Path, reader, img, n_in_series: int) -> None:
    """Refuse folders with unparsable DICOM files or gaps between slices."""
    n_dicom = sum(1 for p in folder.iterdir() if p.is_file() and is_dicom_file(p))
    if n_dicom > n_in_series:
        raise ReadError(
            f"{folder}: {n_dicom - n_in_series} of {n_dicom} DICOM files belong to no "
            "readable series (truncated or corrupt files)"
        )
    n = img.GetSize()[2] if img.GetDimension() == 3 else 1
    if n < 3 or not all(reader.HasMetaDataKey(i, "0020|0032") for i in range(n)):
        return
    normal = np.asarray(img.GetDirection(), float).reshape(3, 3)[:, 2]
    pos = [np.asarray(reader.GetMetaData(i, "0020|0032").split("\\"), float) @ normal
           for i in range(n)]
    steps = np.abs(np.diff(pos))
    if steps.max() - steps.min() > 1e-3 + 0.01 * np.median(steps):
        raise ReadError(
            f"{folder}: slice spacing is not uniform ({steps.min():g} to {steps.max():g} mm); "
            "slices are missing or the series is mixed"
        )


def write_itk(path: Path, array: np.ndarray, geometry: Geometry, compress: bool) -> None:
    """Write ``array`` with ``geometry`` through SimpleITK (format from the extension)."""
    import SimpleITK as sitk

    vector = array.ndim == geometry.ndim + 1
    img = sitk.GetImageFromArray(array, isVector=vector)
    img.SetSpacing(geometry.spacing[::-1])
    img.SetOrigin(geometry.origin)
    img.SetDirection(geometry.direction)
    sitk.WriteImage(img, str(path), compress)
