"""Reading cases: :func:`read_image`, :func:`read_labels` and :func:`read_case`.

``series`` picks one stack of a DICOM folder (see :mod:`napari_segeval.io._dicom_series`;
default: the largest) and ``volume`` one volume of a ``"tzyx"`` time series (default:
all of them). Warnings about the file (invalid header values, NaN voxels, which
series was opened) are in ``case.meta["warnings"]`` / ``meta["series_note"]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from napari_segeval._errors import InvalidLabelsError, ReadError
from napari_segeval.io import _labels, _modality
from napari_segeval.io._dataset_json import (
    dataset_color_table,
    dataset_modality,
    find_dataset_json,
    load_dataset_json,
    structure_names,
)
from napari_segeval.io._formats import (
    DICOM_LIKE,
    ITK,
    ITK_READ_ONLY,
    NIFTI,
    RASTER,
    VIDEO,
    Raw,
    kind,
    suffix,
)
from napari_segeval.io._nan import nan_count
from napari_segeval.io._validate import as_labels, check_image, check_same_grid
from napari_segeval.io.case import MODALITIES, Case, Geometry

SUPPORTED = NIFTI + ITK + ITK_READ_ONLY + (".img",) + DICOM_LIKE + VIDEO + RASTER

#: Formats that hold no image on a grid, refused with a one-line reason.
NOT_GRIDS = {
    ".gii": "GIFTI surfaces are",
    ".trk": "TrackVis streamlines are",
    ".tck": "MRtrix streamlines are",
    ".stl": "STL meshes are",
    ".obj": "OBJ meshes are",
    ".ply": "PLY meshes are",
    ".vtp": "VTK poly data are",
    ".annot": "FreeSurfer annotations are",
}


def read_raw(path: str | Path, series: str | None = None) -> Raw:
    """Read any supported file or folder into a :class:`Raw` (no validation)."""
    p = Path(path)
    if not p.exists():
        raise ReadError(f"{p}: no such file or folder")
    k = kind(p)
    if k is None:
        if suffix(p) in NOT_GRIDS:
            raise ReadError(f"{p}: {NOT_GRIDS[suffix(p)]} not supported (not an image on a grid)")
        what = (
            "folder has no DICOM files or image frames"
            if p.is_dir()
            else (
                f"unsupported file type (supported: {', '.join(SUPPORTED)}, DICOM folders and "
                "DICOMDIR exports, folders of frames)"
            )
        )
        raise ReadError(f"{p}: {what}")
    if series is not None and k not in ("dicom", "dicom-folder"):
        raise ReadError(f"{p}: a series can only be chosen in a DICOM folder")
    if k == "nifti":
        from napari_segeval.io._nifti import read_nifti

        return read_nifti(p)
    if k == "itk":
        from napari_segeval.io._sitk import read_itk_file

        return read_itk_file(p)
    if k in ("dicom", "dicom-folder"):
        from napari_segeval.io._dicom import read_dicom

        return read_dicom(p, series)
    if k == "video":
        from napari_segeval.io._video import read_video

        return read_video(p)
    if k == "frames":
        from napari_segeval.io._video import read_frame_folder

        return read_frame_folder(p)
    from napari_segeval.io._raster import read_raster

    return read_raster(p)


def _dataset(path: Path, dataset_json: str | Path | dict | None) -> dict | None:
    if isinstance(dataset_json, dict):
        return dataset_json
    if dataset_json is not None:
        return load_dataset_json(dataset_json)
    found = find_dataset_json(path)
    return load_dataset_json(found) if found else None


def _modality_of(raw: Raw, override: str | None, dataset: dict | None, path: Path) -> str:
    if override is not None:
        if override not in MODALITIES:
            raise ValueError(f"modality must be one of {MODALITIES}, got {override!r}")
        return override
    return (
        _modality.from_dicom(raw.modality)
        or (dataset_modality(dataset) if dataset else None)
        or _modality.guess_modality(raw.array, raw.axes)
    )


def _select(raw: Raw, volume: int | None, path: Path) -> Raw:
    """Keep volume ``volume`` of a ``"tzyx"`` time series (``None``: keep all)."""
    if volume is None:
        return raw
    if raw.axes != "tzyx":
        raise ReadError(
            f"{path}: a volume can only be chosen in a 4D time series (this file is {raw.axes!r})"
        )
    n = raw.array.shape[0]
    if not -n <= volume < n:
        raise ReadError(
            f"{path}: volume {volume} does not exist (the series has {n} volumes, 0..{n - 1})"
        )
    arr = np.ascontiguousarray(raw.array[volume])
    meta = dict(raw.meta, volume=volume % n, n_volumes=n)
    return Raw(arr, raw.geometry.sub(3), "zyx", meta, raw.modality, raw.has_geometry)


def select_volume(case: Case, volume: int) -> Case:
    """Volume ``volume`` of a ``"tzyx"`` case (image and labels) as a ``"zyx"`` case.

    Examples
    --------
    >>> c = Case(np.zeros((3, 2, 4, 5), np.float32), Geometry.identity(4), axes="tzyx")
    >>> v = select_volume(c, 1)
    >>> v.axes, v.image.shape, v.geometry.ndim, v.meta["volume"]
    ('zyx', (2, 4, 5), 3, 1)
    """
    raw = _select(
        Raw(case.image, case.geometry, case.axes, dict(case.meta)),
        volume,
        case.image_path or Path("image"),
    )
    labels = case.labels
    if labels is not None and labels.ndim == 4:
        labels = np.ascontiguousarray(labels[volume])
    return Case(
        raw.array,
        raw.geometry,
        "zyx",
        case.modality,
        labels,
        dict(case.structures),
        case.image_path,
        case.labels_path,
        raw.meta,
    )


def _warnings(raw: Raw) -> list[str]:
    out = list(raw.meta.get("warnings", []))
    n = nan_count(raw.array)
    if n:
        raw.meta["nan_count"] = n
        out.append(
            f"{n} of {raw.array.size} voxels are NaN (no data, e.g. padding outside "
            "the field of view); models see them as the minimum intensity"
        )
    return out


def read_image(
    path: str | Path,
    *,
    modality: str | None = None,
    series: str | None = None,
    volume: int | None = None,
) -> Case:
    """Read an image, volume or video into a :class:`Case` with its geometry.

    Parameters
    ----------
    path : str or Path
        NIfTI, MHA/MHD, NRRD, DICOM file or series folder, mp4/avi video, folder
        of frames, PNG/JPG/BMP/TIFF.
    modality : str, optional
        Overrides the guess (DICOM tag, then dataset.json, then pixel heuristics).
    series : str, optional
        DICOM folders: the series (``UID`` or ``UID#k``) to read; default the largest.
    volume : int, optional
        4D time series: the volume to read (a ``"zyx"`` case); default all (``"tzyx"``).

    Returns
    -------
    Case
        With ``labels`` None; ``meta["warnings"]`` lists what was odd about the file.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> from napari_segeval.io import write_image, Geometry
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ct.nii.gz"
    >>> _ = write_image(p, np.full((2, 3, 4), -1000, np.int16), Geometry.identity(3, (2.5, 1, 1)))
    >>> case = read_image(p)
    >>> case.axes, case.spacing, case.modality
    ('zyx', (2.5, 1.0, 1.0), 'CT')
    """
    p = Path(path)
    raw = _select(read_raw(p, series), volume, p)
    check_image(raw.array, raw.axes, p)
    raw.meta["warnings"] = _warnings(raw)
    dataset = _dataset(p, None) if raw.modality is None and modality is None else None
    meta = dict(raw.meta, has_geometry=raw.has_geometry)
    meta.pop("palette_indices", None)
    return Case(
        image=raw.array,
        geometry=raw.geometry,
        axes=raw.axes,
        modality=_modality_of(raw, modality, dataset, p),
        image_path=p,
        meta=meta,
    )


def _mask_color_table(
    path: Path, default: dict | None, dataset_json: str | Path | dict | None = None
) -> dict:
    """Colour table of a colour-coded mask: ``default``, the given dataset.json's, or the
    nearest dataset.json's (the mask's folder or up to two above)."""
    if default is not None:
        return default
    if dataset_json is not None:
        source = "dataset.json" if isinstance(dataset_json, dict) else dataset_json
        data = dataset_json if isinstance(dataset_json, dict) else load_dataset_json(dataset_json)
        table = dataset_color_table(data, source)
    else:
        found = find_dataset_json(path)
        table = dataset_color_table(load_dataset_json(found), found) if found else None
    if table is None:
        raise InvalidLabelsError(
            f"{path}: colour-coded mask needs a colour table: put "
            '"color_table": {"1": [255, 0, 0], "2": [0, 255, 0]} (label id: [R, G, B]) in a '
            "dataset.json beside the mask, or give that JSON with --color-table FILE"
        )
    return table


def _labels_raw(
    path: Path,
    color_table: dict | None,
    color_tolerance: float,
    series: str | None = None,
    volume: int | None = None,
    default_color_table: dict | None = None,
) -> tuple[np.ndarray, Raw, dict[int, str]]:
    return _labels_from(
        read_raw(path, series), path, color_table, volume, color_tolerance, default_color_table
    )


def _labels_from(
    raw: Raw,
    path: Path,
    color_table: dict | None,
    volume: int | None,
    color_tolerance: float = _labels.COLOR_TOLERANCE,
    default_color_table: dict | None = None,
    dataset_json: str | Path | dict | None = None,
) -> tuple[np.ndarray, Raw, dict[int, str]]:
    raw = _select(raw, volume, path)
    names: dict[int, str] = {}
    arr, coloured = raw.array, color_table is not None
    if color_table is not None:
        arr, names = _labels.apply_color_table(arr, color_table, path, color_tolerance)
    elif "palette_indices" in raw.meta:
        arr = raw.meta["palette_indices"]
    elif raw.axes.endswith("c"):
        c = arr.astype(np.int32)
        if np.any(c.max(axis=-1) != c.min(axis=-1)):
            table = _mask_color_table(path, default_color_table, dataset_json)
            arr, names = _labels.apply_color_table(arr, table, path, color_tolerance)
            coloured = True
        else:
            arr = arr[..., 0]
    if not raw.has_geometry and not coloured and arr.dtype == np.uint8:
        arr = _labels.binary_255_to_1(arr)
    raw.axes = raw.axes.rstrip("c")
    return as_labels(arr, path), raw, names


def read_labels(
    path: str | Path,
    *,
    color_table: dict | None = None,
    color_tolerance: float = _labels.COLOR_TOLERANCE,
    default_color_table: dict | None = None,
    volume: int | None = None,
) -> tuple[np.ndarray, Geometry, dict[int, str]]:
    """Read a reference label map as integer ids with its geometry and structure names.

    Parameters
    ----------
    path : str or Path
        Any format :func:`read_image` reads.
    color_table : dict, optional
        ``{(r, g, b): id}`` or ``{(r, g, b): (id, name)}`` for colour-coded masks
        (grey keys for grey masks); pixels map to the nearest colour within
        ``color_tolerance``, black to 0. Applied to any mask. Without a table,
        8-bit 0/255 masks from PNG/JPG/TIFF/frame folders become 0/1.
    color_tolerance : float
        Largest RGB distance from a pixel to its table colour.
    default_color_table : dict, optional
        Same form; used only for colour-coded masks (RGB pixels that are not
        grey) and ahead of the ``"color_table"`` of a ``dataset.json`` next to
        or up to two folders above the mask (see
        :mod:`napari_segeval.io._dataset_json`). Grey masks are read as they are.
    volume : int, optional
        4D label maps: the volume to read.

    Returns
    -------
    labels : numpy.ndarray
        Smallest unsigned integer dtype holding the ids.
    geometry : Geometry
    structures : dict of int to str
        From the colour table names, else a ``dataset.json`` next to or up to two
        folders above the file (background excluded).

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> from PIL import Image
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ISIC_0001_segmentation.png"
    >>> Image.fromarray(np.array([[0, 255], [255, 255]], np.uint8)).save(p)
    >>> labels, geometry, names = read_labels(p)
    >>> labels.tolist(), geometry.spacing
    ([[0, 1], [1, 1]], (1.0, 1.0))
    """
    labels, geometry, names, _ = labels_with_axes(
        path, color_table, color_tolerance, default_color_table, volume=volume
    )
    return labels, geometry, names


def labels_with_axes(
    path: str | Path,
    color_table: dict | None = None,
    color_tolerance: float = _labels.COLOR_TOLERANCE,
    default_color_table: dict | None = None,
    volume: int | None = None,
) -> tuple[np.ndarray, Geometry, dict[int, str], str]:
    """:func:`read_labels` plus the axes (``"zyx"``, ``"tyx"``, ``"tzyx"`` or ``"yx"``)."""
    p = Path(path)
    labels, raw, names = _labels_raw(
        p, color_table, color_tolerance, volume=volume, default_color_table=default_color_table
    )
    return labels, raw.geometry, names or _names_beside(p), raw.axes


def _names_beside(path: Path) -> dict[int, str]:
    """Structure names of the nearest ``dataset.json`` (beside or up to two folders above)."""
    dataset = _dataset(path, None)
    return structure_names(dataset) if dataset else {}


def labels_of_image(case: Case) -> tuple[np.ndarray, dict[int, str]]:
    """The grey image of ``case`` as a label map, as :func:`read_labels` reads its file
    (0/255 masks without geometry become 0/1), and the structure names of the nearest
    ``dataset.json``. For a file already read as an image that turns out to hold labels.

    Examples
    --------
    >>> c = Case(np.array([[0, 255], [255, 0]], np.uint8), Geometry.identity(2), axes="yx",
    ...          meta={"has_geometry": False})
    >>> labels_of_image(c)[0].tolist()
    [[0, 1], [1, 0]]
    """
    path = case.image_path or Path("image")
    raw = Raw(case.image, case.geometry, case.axes, {}, None, case.meta.get("has_geometry", True))
    labels, _, names = _labels_from(raw, path, None, None)
    return labels, names or (_names_beside(path) if case.image_path else {})


def _dataset_modality(case: Case, modality: str | None, dataset: dict | None) -> None:
    if modality is None and dataset and case.meta.get("dicom_modality") is None:
        case.modality = dataset_modality(dataset) or case.modality


def read_case(
    image: str | Path,
    labels: str | Path | None = None,
    *,
    modality: str | None = None,
    dataset_json: str | Path | dict | None = None,
    color_table: dict | None = None,
    default_color_table: dict | None = None,
    series: str | None = None,
    volume: int | None = None,
) -> Case:
    """Read an image and (optionally) its reference labels, checking they share a grid.

    Labels from formats without geometry (PNG, frame folders) take the image's
    geometry when the shapes agree. ``series`` and ``volume`` are as in
    :func:`read_image`; ``volume`` also picks the volume of 4D labels. A mismatch raises
    :class:`~napari_segeval._errors.GeometryMismatchError` naming both files and
    stating both shapes, spacings and origins. ``color_table`` and
    ``default_color_table`` are those of :func:`read_labels`.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np
    >>> from napari_segeval.io import write_image, write_labels, Geometry
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> g = Geometry.identity(3, (3.0, 0.7, 0.7))
    >>> img = write_image(d / "ct.nii.gz", np.zeros((2, 4, 4), np.float32), g)
    >>> seg = write_labels(d / "ct_seg.nii.gz", np.ones((2, 4, 4), np.uint8), g)
    >>> case = read_case(img, seg, dataset_json={"labels": {"0": "background", "1": "liver"}})
    >>> case.structures, case.labels.dtype
    ({1: 'liver'}, dtype('uint8'))
    """
    ipath = Path(image)
    dataset = _dataset(ipath, dataset_json)
    if labels is None:
        case = read_image(ipath, modality=modality, series=series, volume=volume)
        _dataset_modality(case, modality, dataset)
        case.structures = structure_names(dataset) if dataset else {}
        return case
    lpath = Path(labels)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # both files inflate at once (the GIL is released)
        label_file = pool.submit(read_raw, lpath)
        case = read_image(ipath, modality=modality, series=series, volume=volume)
        raw4 = label_file.result()
    _dataset_modality(case, modality, dataset)
    lvol = volume if raw4.axes == "tzyx" else None
    if case.axes == "tzyx" and raw4.axes != "tzyx":
        raise ReadError(
            f"{ipath} is a time series of {case.image.shape[0]} volumes but labels "
            f"{lpath} are one {raw4.axes!r} map: choose the volume (--volume T)"
        )
    arr, raw, names = _labels_from(
        raw4, lpath, color_table, lvol, _labels.COLOR_TOLERANCE, default_color_table, dataset_json
    )
    geometry = raw.geometry
    if not raw.has_geometry and arr.shape == case.spatial_shape:
        geometry = case.geometry
    elif not case.meta.get("has_geometry", True) and arr.shape == case.spatial_shape:
        case.geometry = geometry  # e.g. a PNG image with NIfTI labels: trust the labels
    check_same_grid(case.spatial_shape, case.geometry, arr.shape, geometry, ipath, lpath)
    case.labels = arr
    case.labels_path = lpath
    if not names:
        ds = dataset if dataset is not None else _dataset(lpath, None)
        names = structure_names(ds) if ds else {}
    case.structures = names
    return case
