"""DICOM files written with pydicom for the tests (every DICOM case is generated here).

Imported by ``tests/io/conftest.py`` (the ``make`` fixture) and by other test
modules after putting this folder on ``sys.path``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_UID_ROOT = "1.2.826.0.1.3680043.8.498."


def pydicom_file(path: Path, pixels: np.ndarray, *, modality: str = "CT",
                 series_uid: str = _UID_ROOT + "1", instance: int = 1,
                 iop=(1, 0, 0, 0, 1, 0), ipp=(0.0, 0.0, 0.0), spacing=(0.7, 0.6),
                 thickness: float | None = 2.5, preamble: bool = True, gz: bool = False,
                 implicit: bool = False, frames: bool = False, **tags) -> Path:
    """Write ``pixels`` ((rows, cols) or (frames, rows, cols) [+ colour]) with pydicom.

    Geometry tags are omitted when their argument is None; ``tags`` are set as
    given (``None`` deletes). ``preamble=False`` writes no 128-byte preamble and no
    file meta group; ``gz`` gzips the file to ``path`` (name it ``*.dcm.gz``).
    """
    import gzip
    import io

    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, ImplicitVRLittleEndian

    arr = np.asarray(pixels)
    colour = arr.shape[-1] == 3 and arr.ndim >= 3 and tags.get("SamplesPerPixel") == 3
    ds = Dataset()
    ds.SOPClassUID = "1.2.840.10008.5.1.4.1.1.2" if modality == "CT" else "1.2.840.10008.5.1.4.1.1.7"
    ds.SOPInstanceUID = f"{series_uid}.{instance}"
    ds.StudyInstanceUID = _UID_ROOT + "9"
    ds.SeriesInstanceUID = series_uid
    ds.Modality = modality
    ds.SeriesNumber = 1
    ds.InstanceNumber = instance
    if iop is not None:
        ds.ImageOrientationPatient = [float(v) for v in iop]
    if ipp is not None:
        ds.ImagePositionPatient = [float(v) for v in ipp]
    if spacing is not None:
        ds.PixelSpacing = [float(v) for v in spacing]
    if thickness is not None:
        ds.SliceThickness = thickness
    multi = frames or arr.ndim == (4 if colour else 3)
    shape = arr.shape[1:] if multi else arr.shape
    ds.Rows, ds.Columns = int(shape[0]), int(shape[1])
    if multi:
        ds.NumberOfFrames = int(arr.shape[0])
    ds.SamplesPerPixel = 3 if colour else 1
    ds.PhotometricInterpretation = "RGB" if colour else "MONOCHROME2"
    if colour:
        ds.PlanarConfiguration = 0
    ds.BitsAllocated = ds.BitsStored = arr.dtype.itemsize * 8
    ds.HighBit = ds.BitsStored - 1
    ds.PixelRepresentation = 1 if arr.dtype.kind == "i" else 0
    ds.PixelData = np.ascontiguousarray(arr).tobytes()
    for key, value in tags.items():
        if value is None:
            if key in ds:
                delattr(ds, key)
        else:
            setattr(ds, key, value)
    syntax = ImplicitVRLittleEndian if implicit else ExplicitVRLittleEndian
    if preamble:
        ds.file_meta = FileMetaDataset()
        ds.file_meta.MediaStorageSOPClassUID = ds.SOPClassUID
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.file_meta.TransferSyntaxUID = syntax
        ds.preamble = b"\0" * 128
    buf = io.BytesIO()
    ds.save_as(buf, implicit_vr=implicit, little_endian=True, enforce_file_format=preamble)
    data = buf.getvalue()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def pydicom_series(folder: Path, volume: np.ndarray, *, spacing=(2.5, 0.7, 0.6),
                   origin=(-10.0, 20.0, 30.0), iop=(1, 0, 0, 0, 1, 0), prefix: str = "img",
                   series_uid: str = _UID_ROOT + "1", **kw) -> Path:
    """One pydicom file per slice of a (z, y, x) volume, positions along the normal."""
    folder.mkdir(parents=True, exist_ok=True)
    r, c = np.asarray(iop[:3], float), np.asarray(iop[3:], float)
    n = np.cross(r, c)
    for k in range(volume.shape[0]):
        pos = np.asarray(origin, float) + k * spacing[0] * n
        pydicom_file(folder / f"{prefix}{k:03d}.dcm", volume[k], iop=iop, ipp=tuple(pos),
                     spacing=spacing[1:], thickness=spacing[0], instance=k + 1,
                     series_uid=series_uid, **kw)
    return folder
