"""MetaImage, NRRD, Analyze 7.5 and MINC2 through SimpleITK (imported lazily); the
CAMUS 2D+t MetaImage rule is in docs/design.md, "Reading files".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from napari_segeval._errors import InvalidImageError, ReadError
from napari_segeval.io._formats import Raw, analyze_header, suffix
from napari_segeval.io._quiet import quiet, reason
from napari_segeval.io.case import Geometry


def _time_split(g: Geometry) -> bool:
    """True when the slowest (4th ITK) axis of a 4D geometry is orthogonal to the others."""
    d = g.direction_matrix
    return bool(np.allclose(d[3, :3], 0, atol=1e-6) and np.allclose(d[:3, 3], 0, atol=1e-6))


def _is_sequence(path: Path, arr: np.ndarray, g: Geometry) -> bool:
    if suffix(path) not in (".mha", ".mhd") or arr.ndim != 3:
        return False
    if "sequence" in path.name.lower():
        return True
    return arr.dtype == np.uint8 and g.spacing[0] == 1.0 and max(g.spacing[1:]) < 0.5


def to_raw(img, path: Path) -> Raw:
    """Convert a SimpleITK image to :class:`Raw`, choosing axes from dimension and pixels."""
    import SimpleITK as sitk

    arr = sitk.GetArrayFromImage(img)
    try:  # spacing reversed to array order
        g = Geometry(img.GetSpacing()[::-1], img.GetOrigin(), img.GetDirection())
    except ValueError as exc:
        raise InvalidImageError(f"{path}: invalid geometry in the header ({exc})") from exc
    ncomp = img.GetNumberOfComponentsPerPixel()
    dim = img.GetDimension()
    if dim == 4 and arr.shape[0] == 1:
        arr, g, dim = arr[0], g.sub(3), 3
    if dim == 4 and ncomp == 1 and _time_split(g):
        return Raw(arr, g, "tzyx")
    if dim == 3 and arr.shape[0] == 1:
        if not g.is_orthonormal():
            raise InvalidImageError(f"{path}: direction {g.direction} is not orthonormal")
        arr, g, dim = arr[0], Geometry.of_plane(g), 2
    if ncomp not in (1, 3, 4) or dim not in (2, 3):
        raise InvalidImageError(
            f"{path}: unsupported image: {dim}D with {ncomp} components per pixel "
            f"(size {img.GetSize()}); expected a 2D or 3D grey image or 2D/2D+t colour"
        )
    if ncomp > 1:
        return Raw(arr[..., :3], g, "yxc" if dim == 2 else "tyxc")
    if dim == 2:
        return Raw(arr, g, "yx")
    return Raw(arr, g, "tyx" if _is_sequence(path, arr, g) else "zyx")


def check_nrrd_payload(path: Path) -> None:
    """Fully decompress a gzip-encoded attached NRRD payload (ITK ignores a cut trailer)."""
    import zlib

    from napari_segeval.io._gzip import gunzip

    data = path.read_bytes()
    end = data.find(b"\n\n")
    if end < 0 or not data.startswith(b"NRRD"):
        return
    lines = data[:end].decode("latin-1").lower().splitlines()
    if any(line.startswith("data file") for line in lines):
        return
    if any(line.replace(" ", "") in ("encoding:gzip", "encoding:gz") for line in lines):
        try:
            gunzip(data[end + 2 :])
        except (OSError, EOFError, zlib.error) as exc:
            raise ReadError(f"{path}: NRRD data is truncated or corrupt ({exc})") from exc


#: Bytes per value of each MetaImage ElementType (``MET_`` and ``U`` left out).
_MET_BYTES = {"CHAR": 1, "SHORT": 2, "INT": 4, "FLOAT": 4, "DOUBLE": 8, "LONG_LONG": 8}


def metaimage_problem(path: Path) -> str | None:
    """What is wrong with the data of a MetaImage ITK could not read (missing, short), or None."""
    try:
        data = path.read_bytes()
        end = data.find(b"\n", data.find(b"ElementDataFile"))
        if data.find(b"ElementDataFile") < 0 or end < 0:
            truncated = data.startswith((b"ObjectType", b"NDims"))
            return "MetaImage header is truncated (no ElementDataFile line)" if truncated else None
        header = data[:end].decode("latin-1").splitlines()
        fields = {k.strip().lower(): v.strip() for k, _, v in (ln.partition("=") for ln in header)}
        name = fields["elementdatafile"]
        if name.upper() == "LOCAL":
            size = len(data) - end - 1
        elif name.upper().startswith("LIST") or "%" in name:
            return None
        elif not (path.parent / name).is_file():
            return f"its data file {name} does not exist"
        else:
            size = (path.parent / name).stat().st_size
        if fields.get("compresseddata", "false").lower() == "true":
            expected = int(fields["compresseddatasize"])
        else:
            dims = [int(v) for v in fields["dimsize"].split()]
            element = fields["elementtype"].upper().removeprefix("MET_").removeprefix("U")
            channels = int(fields.get("elementnumberofchannels", 1))
            expected = int(np.prod(dims)) * channels * _MET_BYTES[element]
    except (OSError, KeyError, ValueError):
        return None
    if size < expected:
        where = "" if name.upper() == "LOCAL" else f" in {name}"
        return f"MetaImage data is truncated ({size} of {expected} bytes{where})"
    return None


#: What a file of each suffix is, in read errors.
_WHAT = {
    ".hdr": "Analyze/NIfTI header",
    ".img": "Analyze/NIfTI image",
    ".mnc": "MINC file",
    ".nrrd": "NRRD file",
    ".nhdr": "NRRD header",
    ".mha": "MetaImage",
    ".mhd": "MetaImage header",
}


def read_itk_file(path: Path) -> Raw:
    """Read a MetaImage, NRRD, Analyze 7.5 (.hdr/.img) or MINC2 (.mnc) file."""
    import SimpleITK as sitk  # imported before quiet() switches its warnings

    if suffix(path) == ".nrrd":
        check_nrrd_payload(path)
    # an Analyze .img half is opened through its .hdr
    header = (analyze_header(path) or path) if suffix(path) == ".img" else path
    with quiet(native=True):
        try:
            img = sitk.ReadImage(str(header))
        except Exception as exc:
            problem = metaimage_problem(path) if suffix(path) in (".mha", ".mhd") else None
            if problem:
                raise ReadError(f"{path}: {problem}") from exc
            what = _WHAT.get(suffix(path), "image file")
            raise ReadError(f"{path}: cannot read {what} ({reason(exc)})") from exc
    raw = to_raw(img, path)
    if suffix(path) in (".hdr", ".img") and not _is_nifti_pair(header):
        raw.meta.setdefault("warnings", []).append(
            "Analyze 7.5 stores no reliable orientation: the direction is ITK's reading "
            "of the header (check left/right before trusting it)"
        )
    return raw


def _is_nifti_pair(header: Path) -> bool:
    try:
        with open(header, "rb") as fh:
            fh.seek(344)
            return fh.read(4) in (b"ni1\0", b"n+1\0")
    except OSError:
        return False


def write_itk(path: Path, array: np.ndarray, geometry: Geometry, compress: bool = True) -> None:
    """Write ``array`` with ``geometry`` through SimpleITK (format from the extension)."""
    import SimpleITK as sitk

    if geometry.plane is not None:  # a slice placed in 3D: a one-slice 3D grid
        array, geometry = array[None], geometry.plane
    vector = array.ndim == geometry.ndim + 1
    img = sitk.GetImageFromArray(array, isVector=vector)
    img.SetSpacing(geometry.spacing[::-1])
    img.SetOrigin(geometry.origin)
    img.SetDirection(geometry.direction)
    sitk.WriteImage(img, str(path), useCompression=compress)
