"""Multi-channel volumes (the MR sequences of one patient) as one ``"czyx"`` case: one file
per channel (nnU-Net ``_0000``, ``_0001``) or a 4D file read as channels on request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import ReadError
from napari_segeval.io._validate import check_same_grid
from napari_segeval.io.case import Case


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
    from napari_segeval.io.read import labels_with_axes

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
    from napari_segeval.io.read import read_case, read_image

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
