"""``segeval inspect``: what the reader made of a file (and of its labels)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval.cli import _common as common
from napari_segeval.io import structure_label
from napari_segeval.io.case import Case


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="show what the reader made of an image (and its label map)",
        description=(
            "Read PATH as the viewer would and print its kind, shape, axes, spacing, "
            "origin, direction, dtype, intensity range and modality; with --labels, "
            "the label ids with names and voxel counts and whether both grids line up "
            "(exit status 1 when they do not). Unnamed labels are shown as 'label N'; "
            "every name shown here is accepted by --structure of propagate and attack. "
            "Colour-coded masks (NeoPolyp) need a colour table: see --color-table. "
            "A DICOM folder or DICOMDIR export lists "
            "every series (split by orientation, size and spacing; the largest is "
            "described unless --series picks one). Invalid header values, NaN voxels and "
            "the like are printed as warnings; for DICOM, how the pixels are stored and "
            "decoded (colour, transfer syntax). A 4D file whose dataset.json names one "
            "channel per volume (MSD BrainTumour, Prostate) is a multi-channel volume; "
            "any other 4D file a time series (kind 'series'). JSON keys: shape, spacing, "
            "origin, direction, axes, dtype, modality, labels, kind, channels, "
            "intensity_range, path, aligned, problem, series, series_id, pixels, warnings, "
            "nan_count, plane."
        ),
    )
    p.add_argument("path", type=Path, help="image file or folder (DICOM series, frames)")
    p.add_argument("--labels", type=Path, help="reference label map on the same grid")
    common.add_modality_option(p, "override the modality guess")
    common.add_reader_options(p)
    p.set_defaults(func=run)


def _channels(path: Path, case: Case, volume: int | None) -> Case:
    """A 4D file whose ``dataset.json`` names one channel per volume, as a ``"czyx"`` case."""
    if not case.is_time_series or volume is not None:
        return case
    from napari_segeval.io._dataset_json import dataset_channels
    from napari_segeval.io.read import as_channels, nearest_dataset

    try:
        names = dataset_channels(nearest_dataset(path) or {})
    except SegEvalError:  # a broken dataset.json: describe the file as it is
        return case
    if len(names) < 2 or len(names) != case.image.shape[0]:
        return case
    case = as_channels(case)
    case.meta["channel_names"] = list(names)
    return case


def label_rows(labels: np.ndarray, spacing: tuple[float, ...], names: dict[int, str]) -> list:
    """One row per label id present: id, name, voxel count and volume in ml."""
    counts = np.bincount(labels.ravel().astype(np.intp, copy=False))
    voxel_ml = float(np.prod(spacing)) / 1000.0
    return [
        {
            "id": int(lab),
            "name": structure_label(int(lab), names),
            "voxels": int(counts[lab]),
            "volume_ml": float(counts[lab]) * voxel_ml,
        }
        for lab in np.flatnonzero(counts)
    ]


def _series(path: Path) -> dict:
    """Every series of a DICOM folder/file, and files skipped or unreadable (else empty)."""
    from napari_segeval.io._dicom_series import scan
    from napari_segeval.io._formats import kind

    if kind(path) != "dicom":
        return {"series": None}
    series, skipped, broken = scan(path)
    return {"series": [s.to_dict() for s in series], "skipped": skipped, "unreadable": broken}


def _series_lines(p: dict, chosen: str | None) -> list[str]:
    series = p["series"]
    lines = [f"  series     {len(series)} here" + (f", described: {chosen}" if chosen else "")]
    from napari_segeval.io._dicom_series import SeriesInfo

    for s in series:
        mark = "*" if s["id"] == chosen else " "
        lines.append(f"    {mark} {SeriesInfo(**{**s, 'problem': None}).describe()}")
        if s["problem"]:
            lines.append(f"        cannot be read: {s['problem']}")
    splits = dict.fromkeys(s["split"] for s in series if s["split"])
    lines += [f"    note: {why}" for why in splits]
    lines += [f"    skipped: {why}" for why in p.get("skipped", [])]
    lines += [f"    unreadable: {why}" for why in p.get("unreadable", [])]
    return lines


def run(args: argparse.Namespace) -> int:
    """Describe ``args.path`` (and ``args.labels``) as a table or JSON."""
    from napari_segeval.io import read_image, read_labels, structure_names
    from napari_segeval.io.read import nearest_dataset

    listing = _series(args.path)
    try:
        case = read_image(args.path, modality=args.modality, series=args.series, volume=args.volume)
    except SegEvalError:
        if listing["series"]:  # show what is there, then the one-line error
            common.emit(
                args,
                {"path": str(args.path), **listing},
                "\n".join([str(args.path), *_series_lines(listing, None)]),
            )
        raise
    case = _channels(args.path, case, args.volume)
    img = case.image
    finite = img[np.isfinite(img)] if img.dtype.kind == "f" else img
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
    payload = {
        "path": str(args.path),
        "kind": case.kind,
        "channels": case.meta.get("channel_names") if case.is_multichannel else None,
        "shape": list(img.shape),
        "axes": case.axes,
        "spacing": list(case.geometry.spacing),
        "origin": list(case.geometry.origin),
        "direction": list(case.geometry.direction),
        "dtype": str(img.dtype),
        "modality": case.modality,
        "intensity_range": [lo, hi],
        "labels": None,
        "plane": case.geometry.plane.to_dict() if case.geometry.plane else None,
        **listing,
        "series_id": case.meta.get("series_id"),
        "pixels": case.meta.get("pixels"),
        "warnings": list(case.meta.get("warnings", [])),
        "nan_count": int(case.meta.get("nan_count", 0)),
        "has_geometry": bool(case.meta.get("has_geometry", True)),
    }
    problem = None
    if args.labels is not None:
        labels, geometry, names = read_labels(
            args.labels, default_color_table=common.color_table(args)
        )
        if not names:  # a prediction written elsewhere: the image's dataset.json names
            names = structure_names(nearest_dataset(args.path) or {})
        names = {**case.structures, **names}
        payload["labels"] = label_rows(labels, geometry.spacing, names)
        if labels.shape != case.spatial_shape:  # why the label grid does not line up
            problem = f"shape {labels.shape} differs from image shape {case.spatial_shape}"
        elif not case.geometry.matches(geometry):
            problem = f"labels {geometry.describe()} differ from image {case.geometry.describe()}"
        payload["aligned"] = problem is None
        payload["problem"] = problem
    return common.emit(args, payload, _text(payload), 1 if problem else 0)


def _kind_text(p: dict) -> str:
    """``volume``, ``series (volumes over time)``, ``volume, 2 channels: T2, ADC`` ..."""
    if p.get("channels"):
        return f"{p['kind']}, {len(p['channels'])} channels: {', '.join(p['channels'])}"
    return "series (volumes over time)" if p["kind"] == "series" else p["kind"]


def _text(p: dict) -> str:
    def nums(v: list) -> str:
        return "(" + ", ".join(f"{x:g}" for x in v) + ")"

    lines = [f"{p['path']}"]
    if p.get("series"):
        lines += _series_lines(p, p.get("series_id"))
    lines += [
        f"  kind       {_kind_text(p)} ({p['axes']})",
        f"  shape      {tuple(p['shape'])}",
        f"  dtype      {p['dtype']}",
        f"  modality   {p['modality']}",
        f"  spacing    {nums(p['spacing'])} "
        + ("mm" if p.get("has_geometry", True) else "(pixel units: no size in mm)"),
        f"  origin     {nums(p['origin'])} mm (LPS)",
        f"  direction  {nums(p['direction'])}",
        f"  intensity  {p['intensity_range'][0]} .. {p['intensity_range'][1]}"
        + (" (finite voxels)" if p.get("nan_count") else ""),
    ]
    if p.get("pixels"):
        lines.append(f"  pixels     {p['pixels']}")
    if p.get("plane"):
        pl = p["plane"]
        lines.append(
            f"  plane      origin {nums(pl['origin'])} mm (LPS), direction {nums(pl['direction'])}"
        )
    if p.get("nan_count"):
        lines.append(f"  NaN        {p['nan_count']} voxels")
    lines += [f"  warning    {w}" for w in p.get("warnings", [])]
    if p["labels"] is not None:
        rows = [[r["id"], r["name"], r["voxels"], r["volume_ml"]] for r in p["labels"]]
        lines += ["", common.format_table(["id", "name", "voxels", "volume_ml"], rows, digits=2)]
        lines += [
            "",
            "labels line up with the image"
            if p["aligned"]
            else f"labels do NOT line up: {p['problem']}",
        ]
    return "\n".join(lines)
