"""NIfTI (.nii, .nii.gz) through nibabel, converted between RAS and our LPS/ITK convention.

nibabel gives the voxel array indexed ``(i, j, k)`` and an affine to RAS mm. We
transpose the array to ``(k, j, i)`` (slowest first, as ITK does), and flip the
first two rows of the affine to get LPS. ITK index axes are nibabel's ``(i, j, k)``,
so the direction columns and spacing come straight from the LPS affine's columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from napari_segeval._errors import InvalidImageError, ReadError, SegEvalError, WriteError
from napari_segeval.io._formats import Raw
from napari_segeval.io.case import Geometry

_FLIP = np.diag([-1.0, -1.0, 1.0])


def _geometry_from_affine(affine: np.ndarray, n: int, source: str | Path) -> Geometry:
    m = (_FLIP @ affine[:3, :3])[:n, :n]
    origin = (_FLIP @ affine[:3, 3])[:n]
    spacing = np.linalg.norm(m, axis=0)
    if not np.all(np.isfinite(m)) or np.any(spacing == 0) or not np.all(np.isfinite(origin)):
        raise ReadError(f"{source}: NIfTI affine is degenerate or not finite:\n{affine}")
    return Geometry(tuple(spacing[::-1]), tuple(origin), tuple((m / spacing).ravel()))


def affine_from_geometry(geometry: Geometry) -> np.ndarray:
    """RAS affine (nibabel convention) of ``geometry`` for a 2D or 3D array.

    Examples
    --------
    >>> g = Geometry((3.0, 0.5, 0.5), (10.0, 20.0, -5.0), (1, 0, 0, 0, 1, 0, 0, 0, 1))
    >>> affine_from_geometry(g)[:3].tolist()
    [[-0.5, 0.0, 0.0, -10.0], [0.0, -0.5, 0.0, -20.0], [0.0, 0.0, 3.0, -5.0]]
    """
    n = geometry.ndim
    if n not in (2, 3):
        raise WriteError(f"NIfTI holds 2D or 3D grids, not {n}D")
    a = np.eye(4)
    a[:n, :n] = geometry.direction_matrix * np.asarray(geometry.spacing[::-1])[None, :]
    a[:n, 3] = geometry.origin
    a[:3] = _FLIP @ a[:3]
    return a


def _load_gz(path: Path):
    """Decompress strictly (gzip checks its CRC and length trailer) then parse."""
    import gzip

    import nibabel as nib

    raw = gzip.decompress(Path(path).read_bytes())
    nifti2 = raw[:4] in (np.int32(540).tobytes(), np.int32(540).byteswap().tobytes())
    return (nib.Nifti2Image if nifti2 else nib.Nifti1Image).from_bytes(raw)


def read_nifti(path: Path) -> Raw:
    """Read a NIfTI file as a :class:`Raw` in ``(z, y, x)`` / ``(y, x)`` / ``(t, y, x)`` order.

    4D files are accepted where the fourth axis is trivial (``(X, Y, Z, 1)``, read
    as a volume) or the third is (``(X, Y, 1, T)``, read as a 2D+t sequence with
    frame spacing 1); other 4D and higher files raise :class:`InvalidImageError`.
    """
    import nibabel as nib

    try:
        if str(path).lower().endswith(".gz"):
            img = _load_gz(path)
        else:
            img = nib.load(str(path), mmap=False)
        data = np.asanyarray(img.dataobj)
        affine = np.asarray(img.affine, dtype=float)
    except SegEvalError:
        raise
    except Exception as exc:  # nibabel, gzip, zlib and numpy raise many kinds
        raise ReadError(f"{path}: cannot read NIfTI file ({type(exc).__name__}: {exc})") from exc
    while data.ndim > 3 and data.shape[-1] == 1:
        data = data[..., 0]
    if data.ndim == 2:
        return Raw(np.ascontiguousarray(data.T), _geometry_from_affine(affine, 2, path), "yx")
    if data.ndim == 3:
        return Raw(np.ascontiguousarray(data.T), _geometry_from_affine(affine, 3, path), "zyx")
    if data.ndim == 4 and data.shape[2] == 1:
        g2 = _geometry_from_affine(affine, 2, path)
        d = np.eye(3)
        d[:2, :2] = g2.direction_matrix
        geometry = Geometry((1.0, *g2.spacing), (*g2.origin, 0.0), tuple(d.ravel()))
        frames = np.ascontiguousarray(np.transpose(data[:, :, 0, :], (2, 1, 0)))
        return Raw(frames, geometry, "tyx", meta={"nifti_4d": True})
    raise InvalidImageError(
        f"{path}: unsupported NIfTI dimensionality {data.ndim}D with shape {data.shape}; "
        "expected a 2D image, a 3D volume or a 2D+t sequence (X, Y, 1, T) — "
        "split multi-channel files into one 3D file per channel"
    )


def write_nifti(path: Path, array: np.ndarray, geometry: Geometry) -> None:
    """Write ``array`` (slowest axis first) with ``geometry`` to ``path`` (.nii/.nii.gz)."""
    import nibabel as nib

    if array.ndim != geometry.ndim:
        raise WriteError(
            f"{path}: NIfTI cannot store a colour axis (array {array.shape}, "
            f"{geometry.ndim}D geometry); write .mha or .nrrd instead"
        )
    affine = affine_from_geometry(geometry)
    img = nib.Nifti1Image(np.transpose(array), affine)
    img.set_sform(affine, code=1)
    img.set_qform(affine, code=1)
    img.header.set_xyzt_units("mm")
    nib.save(img, str(path))
