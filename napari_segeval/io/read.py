"""Reading cases: :func:`read_image`, :func:`read_labels`, :func:`read_case` and, for the MR
sequences of one patient (one file per channel, or a 4D file), :func:`read_channels`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidLabelsError, ReadError
from napari_segeval.io import _labels
from napari_segeval.io._dataset_json import (
    dataset_color_table,
    dataset_modality,
    find_dataset_json,
    from_dicom,
    guess_modality,
    load_dataset_json,
    structure_names,
)
from napari_segeval.io._formats import SUPPORTED, Raw, kind, suffix
from napari_segeval.io._nan import nan_count
from napari_segeval.io._validate import as_labels, check_image, check_same_grid
from napari_segeval.io.case import MODALITIES, Case, Geometry

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


#: Format kind -> (module of this package, reader); each imported on first use.
_READERS = {
    "nifti": ("_nifti", "read_nifti"),
    "itk": ("_sitk", "read_itk_file"),
    "dicom": ("_dicom", "read_dicom"),
    "video": ("_raster", "read_video"),
    "frames": ("_raster", "read_frame_folder"),
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
        if p.is_dir():
            raise ReadError(f"{p}: folder has no DICOM files or image frames")
        raise ReadError(
            f"{p}: unsupported file type (supported: {', '.join(SUPPORTED)}, DICOM folders and "
            "DICOMDIR exports, folders of frames)"
        )
    dicom = k == "dicom"
    if series is not None and not dicom:
        raise ReadError(f"{p}: a series can only be chosen in a DICOM folder")
    module, name = _READERS.get(k, ("_raster", "read_raster"))
    reader = getattr(importlib.import_module(f"napari_segeval.io.{module}"), name)
    return reader(p, series) if dicom else reader(p)


def nearest_dataset(path: Path, dataset_json: str | Path | dict | None = None) -> dict | None:
    """``dataset_json`` (a dict, or a file to load), else the nearest ``dataset.json`` of
    ``path`` (:func:`~napari_segeval.io._dataset_json.find_dataset_json`), else None."""
    if isinstance(dataset_json, dict):
        return dataset_json
    if dataset_json is not None:
        return load_dataset_json(dataset_json)
    found = find_dataset_json(path)
    return load_dataset_json(found) if found else None


def _modality_of(raw: Raw, override: str | None, dataset: dict | None) -> str:
    if override is not None:
        if override not in MODALITIES:
            raise ValueError(f"modality must be one of {MODALITIES}, got {override!r}")
        return override
    return (
        from_dicom(raw.modality)
        or (dataset_modality(dataset) if dataset else None)
        or guess_modality(raw.array, raw.axes)
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
    return replace(
        case,
        image=raw.array,
        geometry=raw.geometry,
        axes="zyx",
        labels=labels,
        structures=dict(case.structures),
        meta=raw.meta,
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
    path
        Any supported file or folder (see :mod:`napari_segeval.io`).
    modality
        Overrides the guess (DICOM tag, then dataset.json, then pixel heuristics).
    series
        DICOM folders: the series (``UID`` or ``UID#k``) to read; default the largest.
    volume
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
    dataset = nearest_dataset(p) if raw.modality is None and modality is None else None
    meta = dict(raw.meta, has_geometry=raw.has_geometry)
    meta.pop("palette_indices", None)
    return Case(
        image=raw.array,
        geometry=raw.geometry,
        axes=raw.axes,
        modality=_modality_of(raw, modality, dataset),
        image_path=p,
        meta=meta,
    )


def _mask_color_table(
    path: Path, default: dict | None, dataset_json: str | Path | dict | None = None
) -> dict:
    """Colour table of a colour mask: ``default``, the given or the nearest dataset.json's."""
    if default is not None:
        return default
    source = dataset_json if dataset_json is not None else find_dataset_json(path)
    name = "dataset.json" if isinstance(source, dict) else source
    table = dataset_color_table(nearest_dataset(path, source) or {}, name) if name else None
    if table is None:
        raise InvalidLabelsError(
            f"{path}: colour-coded mask needs a colour table: put "
            '"color_table": {"1": [255, 0, 0], "2": [0, 255, 0]} (label id: [R, G, B]) in a '
            "dataset.json beside the mask, or give that JSON with --color-table FILE"
        )
    return table


def _labels_from(
    raw: Raw,
    path: Path,
    color_table: dict | None,
    volume: int | None,
    default_color_table: dict | None = None,
    dataset_json: str | Path | dict | None = None,
) -> tuple[np.ndarray, Raw, dict[int, str]]:
    raw = _select(raw, volume, path)
    names: dict[int, str] = {}
    arr, coloured = raw.array, color_table is not None
    if color_table is not None:
        arr, names = _labels.apply_color_table(arr, color_table, path)
    elif "palette_indices" in raw.meta:
        arr = raw.meta["palette_indices"]
    elif raw.axes.endswith("c"):
        c = arr.astype(np.int32)
        if np.any(c.max(axis=-1) != c.min(axis=-1)):
            table = _mask_color_table(path, default_color_table, dataset_json)
            arr, names = _labels.apply_color_table(arr, table, path)
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
    default_color_table: dict | None = None,
    volume: int | None = None,
) -> tuple[np.ndarray, Geometry, dict[int, str]]:
    """Read a reference label map as integer ids with its geometry and structure names.

    Parameters
    ----------
    path
        Any format :func:`read_image` reads.
    color_table
        ``{(r, g, b): id}`` or ``{(r, g, b): (id, name)}`` (grey keys for grey masks),
        applied to any mask: nearest colour (within RGB distance
        :data:`~napari_segeval.io._labels.COLOR_TOLERANCE`), black is 0. Without one,
        8-bit 0/255 masks without geometry become 0/1.
    default_color_table
        Same form, for colour-coded (non-grey RGB) masks only; ahead of the
        ``"color_table"`` of a nearby ``dataset.json``.
    volume
        4D label maps: the volume to read.

    Returns
    -------
    labels : numpy.ndarray
        Smallest unsigned integer dtype holding the ids.
    geometry : Geometry
    structures : dict of int to str
        From the colour table, else a nearby ``dataset.json`` (background excluded).
    """
    return labels_with_axes(path, color_table, default_color_table, volume)[:3]


def labels_with_axes(
    path: str | Path,
    color_table: dict | None = None,
    default_color_table: dict | None = None,
    volume: int | None = None,
) -> tuple[np.ndarray, Geometry, dict[int, str], str]:
    """:func:`read_labels` plus the axes (``"zyx"``, ``"tyx"``, ``"tzyx"`` or ``"yx"``)."""
    p = Path(path)
    labels, raw, names = _labels_from(read_raw(p), p, color_table, volume, default_color_table)
    return labels, raw.geometry, names or structure_names(nearest_dataset(p) or {}), raw.axes


def labels_of_image(case: Case) -> tuple[np.ndarray, dict[int, str]]:
    """A grey image already read as ``case`` as :func:`read_labels` reads it, with structure names."""
    path = case.image_path or Path("image")
    raw = Raw(case.image, case.geometry, case.axes, {}, None, case.meta.get("has_geometry", True))
    labels, _, names = _labels_from(raw, path, None, None)
    return labels, names or (
        structure_names(nearest_dataset(path) or {}) if case.image_path else {}
    )


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

    Labels without geometry (PNG, frame folders) take the image's when the shapes
    agree; a mismatch raises :class:`~napari_segeval._errors.GeometryMismatchError`.
    The keywords are those of :func:`read_image` and :func:`read_labels`; ``volume``
    also picks the volume of 4D labels.

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
    from concurrent.futures import ThreadPoolExecutor

    ipath, lpath = Path(image), None if labels is None else Path(labels)
    dataset = nearest_dataset(ipath, dataset_json)
    with ThreadPoolExecutor(1) as pool:  # both files inflate at once (the GIL is released)
        label_file = None if lpath is None else pool.submit(read_raw, lpath)
        case = read_image(ipath, modality=modality, series=series, volume=volume)
        raw4 = None if label_file is None else label_file.result()
    if modality is None and dataset and case.meta.get("dicom_modality") is None:
        case.modality = dataset_modality(dataset) or case.modality
    if lpath is None or raw4 is None:
        case.structures = structure_names(dataset or {})
        return case
    lvol = volume if raw4.axes == "tzyx" else None
    if case.axes == "tzyx" and raw4.axes != "tzyx":
        raise ReadError(
            f"{ipath} is a time series of {case.image.shape[0]} volumes but labels "
            f"{lpath} are one {raw4.axes!r} map: choose the volume (--volume T)"
        )
    arr, raw, names = _labels_from(
        raw4, lpath, color_table, lvol, default_color_table, dataset_json
    )
    geometry = raw.geometry
    if not raw.has_geometry and arr.shape == case.spatial_shape:
        geometry = case.geometry
    elif not case.meta.get("has_geometry", True) and arr.shape == case.spatial_shape:
        case.geometry = geometry  # e.g. a PNG image with NIfTI labels: trust the labels
    check_same_grid(case.spatial_shape, case.geometry, arr.shape, geometry, ipath, lpath)
    case.labels, case.labels_path = arr, lpath
    case.structures = names or structure_names(
        (dataset if dataset is not None else nearest_dataset(lpath)) or {}
    )
    return case


def as_channels(case: Case) -> Case:
    """A ``"tzyx"`` case read from a 4D file, with its fourth file axis taken as channels."""
    if not case.is_time_series:
        raise ReadError(
            f"{case.image_path or 'image'}: only a 4D volume series can be read as "
            f"channels (this image is {case.axes!r})"
        )
    meta = {k: v for k, v in case.meta.items() if k not in ("time_step", "volume", "n_volumes")}
    meta["n_channels"] = int(case.image.shape[0])
    return replace(
        case,
        geometry=case.geometry.sub(3),
        axes="czyx",
        structures=dict(case.structures),
        meta=meta,
    )


def select_channel(case: Case, channel: int) -> Case:
    """Channel ``channel`` of a ``"czyx"`` case as a ``"zyx"`` case (labels kept)."""
    if not case.is_multichannel:
        raise ReadError(f"{case.image_path or 'image'}: not a multi-channel volume")
    n = case.n_channels
    if not -n <= channel < n:
        raise ReadError(
            f"{case.image_path or 'image'}: channel {channel} does not exist "
            f"(the image has {n} channels, 0..{n - 1})"
        )
    meta = dict(case.meta, channel=channel % n)
    return replace(
        case,
        image=np.ascontiguousarray(case.image[channel]),
        axes="zyx",
        structures=dict(case.structures),
        meta=meta,
    )


def _labels_onto(case: Case, labels: Path, color_table: dict | None) -> Case:
    arr, geometry, names, _ = labels_with_axes(labels, color_table)
    check_same_grid(
        case.spatial_shape, case.geometry, arr.shape, geometry, case.image_path or "image", labels
    )
    case.labels, case.labels_path = arr, labels
    case.structures = names or case.structures
    return case


def read_channels(
    images: Sequence[str | Path],
    labels: str | Path | None = None,
    *,
    n_channels: int | None = None,
    modality: str | None = None,
    dataset_json: str | Path | dict | None = None,
    color_table: dict | None = None,
) -> Case:
    """Read every channel of one case (and its labels) into one case.

    Parameters
    ----------
    images
        One 3D file per channel (``_0000``, ``_0001`` ...) on one grid, or a single file
        (a 4D file's fourth axis is the channels, a 3D file is one channel).
    labels
        Reference label map on the volumes' grid.
    n_channels
        Channels the data set says a case has; a different count raises ``ReadError``.
    modality, dataset_json, color_table
        As :func:`~napari_segeval.io.read_case`.

    Returns
    -------
    Case
        ``"czyx"`` with ``meta["n_channels"]``; a single channel stays ``"zyx"``, exactly
        as :func:`~napari_segeval.io.read_case` reads it.
    """
    paths = [Path(p) for p in images]
    if not paths:
        raise ReadError("no image file given")
    lpath = Path(labels) if labels is not None else None
    given: dict[str, Any] = {"modality": modality, "dataset_json": dataset_json}
    if len(paths) == 1:
        case = read_case(paths[0], None, **given)
        if case.is_time_series:
            case = as_channels(case)
            if lpath is not None:
                case = _labels_onto(case, lpath, color_table)
        elif lpath is not None:  # one channel: exactly what read_case makes of it
            case = read_case(paths[0], lpath, color_table=color_table, **given)
    else:
        case = read_case(paths[0], lpath, color_table=color_table, **given)
        parts = [case.image]
        for p in paths[1:]:
            other = read_image(p, modality=case.modality)
            if other.axes != "zyx" or case.axes != "zyx":
                raise ReadError(
                    f"{p}: a channel file must hold one 3D volume (this one is "
                    f"{other.axes!r}, the first channel {case.axes!r})"
                )
            check_same_grid(
                case.spatial_shape, case.geometry, other.image.shape, other.geometry, paths[0], p
            )
            parts.append(other.image)
        case.image = np.stack(parts)
        case.axes = "czyx"
        case.meta["n_channels"] = len(paths)
        case.meta["channel_paths"] = [str(p) for p in paths]
    if n_channels is not None and case.n_channels != int(n_channels):
        raise ReadError(
            f"{paths[0]}: the data set names {n_channels} channels, the image has {case.n_channels}"
        )
    return case
