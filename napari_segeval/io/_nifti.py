"""NIfTI through nibabel, converted between RAS and our LPS/ITK convention (axes and
4D forms: docs/design.md, "Reading files"); CIFTI is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from napari_segeval._errors import InvalidImageError, ReadError, WriteError
from napari_segeval.io._formats import Raw
from napari_segeval.io._quiet import one_line_errors, quiet
from napari_segeval.io.case import Geometry

#: Name endings of CIFTI-2 files (all are also ``.nii``).
CIFTI_NAME = re.compile(
    r"\.(dtseries|dscalar|dlabel|dconn|pconn|ptseries|pscalar|plabel|pdconn|dpconn|"
    r"pconnseries|pconnscalar|dfan|dfibersamp|dfansamp|fiberTEMP)\.nii$"
)

_FLIP = np.diag([-1.0, -1.0, 1.0])


def _geometry_from_affine(affine: np.ndarray, n: int, source: str | Path) -> Geometry:
    m = (_FLIP @ affine[:3, :3])[:n, :n]
    origin = (_FLIP @ affine[:3, 3])[:n]
    spacing = np.linalg.norm(m, axis=0)
    if not np.all(np.isfinite(m)) or np.any(spacing == 0) or not np.all(np.isfinite(origin)):
        flat = ", ".join(f"{v:g}" for v in np.asarray(affine)[:3].ravel())
        raise ReadError(f"{source}: NIfTI affine is degenerate or not finite ({flat})")
    return Geometry(tuple(spacing[::-1]), tuple(origin), tuple((m / spacing).ravel()))


def _slice_geometry(affine: np.ndarray, source: str | Path) -> Geometry:
    """2D geometry of a one-slice file, with its 3D placement when the affine has one."""
    try:
        plane = _geometry_from_affine(affine, 3, source)
    except ReadError:  # e.g. a 2D file whose third column is zero: no 3D placement
        return _geometry_from_affine(affine, 2, source)
    if not plane.is_orthonormal():
        raise ReadError(f"{source}: NIfTI affine is sheared (its columns are not at right angles)")
    return Geometry.of_plane(plane)


def affine_from_geometry(geometry: Geometry) -> np.ndarray:
    """RAS affine (nibabel convention) of ``geometry`` for a 2D or 3D array."""
    if geometry.plane is not None:
        geometry = geometry.plane
    if geometry.ndim == 4:  # (t, z, y, x): the spatial block
        geometry = geometry.sub(3)
    n = geometry.ndim
    if n not in (2, 3):
        raise WriteError(f"NIfTI holds 2D, 3D or 3D+t grids, not {n}D")
    a = np.eye(4)
    a[:n, :n] = geometry.direction_matrix * np.asarray(geometry.spacing[::-1])[None, :]
    a[:n, 3] = geometry.origin
    a[:3] = _FLIP @ a[:3]
    return a


def _nifti_class(head: bytes):
    import nibabel as nib

    nifti2 = head[:4] in (np.int32(540).tobytes(), np.int32(540).byteswap().tobytes())
    return nib.Nifti2Image if nifti2 else nib.Nifti1Image


def _load_gz(path: Path):
    """``(image, data)`` of a ``.nii.gz`` read as it inflates; on error read again the plain way."""
    from napari_segeval.io._gzip import gunzip, open_gzip

    try:
        with open_gzip(path) as fh:
            klass = _nifti_class(fh.read(4))
            fh.seek(0)
            img = klass.from_stream(fh)
            data = np.asanyarray(img.dataobj)
            fh.read()  # to the end, so the trailer is checked
        return img, data
    except Exception:  # noqa: BLE001, S110 - the plain read below reports the error
        pass
    raw = gunzip(Path(path).read_bytes())
    img = _nifti_class(raw).from_bytes(raw)
    return img, np.asanyarray(img.dataobj)


def _intent_code(path: Path) -> int:
    """The header's intent code, read before nibabel picks an image class (0 if unknown)."""
    from napari_segeval.io._gzip import open_gzip

    try:
        with open_gzip(path) if str(path).lower().endswith(".gz") else open(path, "rb") as fh:
            head = fh.read(540)
        klass = _nifti_class(head).header_class
        header = klass(head[: klass.template_dtype.itemsize], check=False)
        return int(header["intent_code"]) if header["sizeof_hdr"] in (348, 540) else 0
    except Exception:  # noqa: BLE001 - a short or odd header is reported by the real read
        return 0


def _time_step(img) -> float | None:
    try:
        zooms = img.header.get_zooms()
        step = float(zooms[3]) if len(zooms) > 3 else None
    except Exception:  # noqa: BLE001 - odd headers
        return None
    return step if step and np.isfinite(step) and step > 0 else None


def read_nifti(path: Path) -> Raw:
    """Read a NIfTI file as a :class:`Raw`; trailing singleton axes dropped, 5D+ refused."""
    import nibabel as nib

    if CIFTI_NAME.search(str(path)) or 3000 <= _intent_code(path) < 3100:
        raise InvalidImageError(
            f"{path}: CIFTI is not supported (surface/grayordinate data, not an image on a grid)"
        )
    with one_line_errors(f"{path}: cannot read NIfTI file"), quiet():
        if str(path).lower().endswith(".gz"):
            img, data = _load_gz(path)
        else:
            img = nib.load(str(path), mmap=False)
            data = np.asanyarray(img.dataobj)  # type: ignore[attr-defined]  # a SpatialImage
        affine = np.asarray(img.affine, dtype=float)
    while data.ndim > 3 and data.shape[-1] == 1:
        data = data[..., 0]
    if data.ndim == 2 or (data.ndim == 3 and data.shape[2] == 1):
        arr = np.ascontiguousarray(data.reshape(data.shape[:2]).T)
        return Raw(arr, _slice_geometry(affine, path), "yx")
    if data.ndim == 3:
        return Raw(np.ascontiguousarray(data.T), _geometry_from_affine(affine, 3, path), "zyx")
    if data.ndim == 4 and data.shape[2] > 1:
        geometry = _geometry_from_affine(affine, 3, path).stacked()
        vols = np.ascontiguousarray(np.transpose(data, (3, 2, 1, 0)))
        return Raw(vols, geometry, "tzyx", meta={"nifti_4d": True, "time_step": _time_step(img)})
    if data.ndim == 4 and data.shape[2] == 1:
        geometry = _geometry_from_affine(affine, 2, path).stacked()
        frames = np.ascontiguousarray(np.transpose(data[:, :, 0, :], (2, 1, 0)))
        return Raw(frames, geometry, "tyx", meta={"nifti_4d": True})
    raise InvalidImageError(
        f"{path}: unsupported NIfTI dimensionality {data.ndim}D with shape {data.shape}; "
        "expected a 2D image, a 3D volume or a 4D time series (X, Y, Z, T) -- "
        "split multi-channel files into one 3D file per channel"
    )


def nifti_image(array: np.ndarray, geometry: Geometry):
    """NIfTI-1 image of ``array`` (slowest axis first) on ``geometry``: qform = sform code 1, mm."""
    import nibabel as nib

    affine = affine_from_geometry(geometry)
    if geometry.plane is not None:  # a slice placed in 3D: (X, Y, 1) with its affine
        array = array[None]
    img = nib.Nifti1Image(np.transpose(array), affine)  # (t, z, y, x) -> (x, y, z, t) too
    img.set_sform(affine, code=1)
    img.set_qform(affine, code=1)
    img.header.set_xyzt_units("mm")
    return img


def write_nifti(path: Path, array: np.ndarray, geometry: Geometry) -> None:
    """Write ``array`` (slowest axis first) with ``geometry`` to ``path`` (.nii/.nii.gz)."""
    import nibabel as nib

    if array.ndim != geometry.ndim:
        raise WriteError(
            f"{path}: NIfTI cannot store a colour axis (array {array.shape}, "
            f"{geometry.ndim}D geometry); write .mha or .nrrd instead"
        )
    nib.save(nifti_image(array, geometry), str(path))
