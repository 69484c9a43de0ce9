"""``segeval inspect``: what the reader made of a file (and of its labels)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from napari_segeval.cli._common import add_color_table_option, add_json_flag, emit, format_table
from napari_segeval.io import structure_label
from napari_segeval.io.case import MODALITIES, Case, Geometry


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``segeval inspect``."""
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
            "JSON keys: shape, spacing, origin, "
            "direction, axes, dtype, modality, labels, kind, intensity_range, path, "
            "aligned, problem."
        ),
    )
    p.add_argument("path", type=Path, help="image file or folder (DICOM series, frames)")
    p.add_argument("--labels", type=Path, help="reference label map on the same grid")
    p.add_argument("--modality", choices=MODALITIES, help="override the modality guess")
    add_color_table_option(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def label_rows(labels: np.ndarray, spacing: tuple[float, ...], names: dict[int, str]) -> list:
    """One row per label id present: id, name, voxel count and volume in ml.

    Examples
    --------
    >>> lab = np.array([[0, 1], [1, 2]], dtype=np.uint8)
    >>> [(r["id"], r["voxels"]) for r in label_rows(lab, (1.0, 1.0), {1: "a"})]
    [(0, 1), (1, 2), (2, 1)]
    """
    counts = np.bincount(labels.ravel().astype(np.intp, copy=False))
    voxel_ml = float(np.prod(spacing)) / 1000.0
    rows = []
    for lab in np.flatnonzero(counts):
        name = structure_label(int(lab), names)
        rows.append(
            {
                "id": int(lab),
                "name": name,
                "voxels": int(counts[lab]),
                "volume_ml": float(counts[lab]) * voxel_ml,
            }
        )
    return rows


def _alignment(case: Case, shape: tuple[int, ...], geometry: Geometry) -> str | None:
    """Why the label grid does not line up with the image, or None."""
    if tuple(shape) != case.spatial_shape:
        return f"shape {tuple(shape)} differs from image shape {case.spatial_shape}"
    if not case.geometry.matches(geometry):
        return f"labels {geometry.describe()} differ from image {case.geometry.describe()}"
    return None


def run(args: argparse.Namespace) -> int:
    """Describe ``args.path`` (and ``args.labels``) as a table or JSON."""
    from napari_segeval.cli._common import color_table
    from napari_segeval.io import read_image, read_labels
    from napari_segeval.io._dataset_json import find_dataset_json, load_dataset_json
    from napari_segeval.io._dataset_json import structure_names as dataset_names
    from napari_segeval.propagation import case_kind

    case = read_image(args.path, modality=args.modality)
    img = case.image
    finite = img[np.isfinite(img)] if img.dtype.kind == "f" else img
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
    payload = {
        "path": str(args.path),
        "kind": case_kind(case.axes),
        "shape": list(img.shape),
        "axes": case.axes,
        "spacing": list(case.geometry.spacing),
        "origin": list(case.geometry.origin),
        "direction": list(case.geometry.direction),
        "dtype": str(img.dtype),
        "modality": case.modality,
        "intensity_range": [lo, hi],
        "labels": None,
    }
    problem = None
    if args.labels is not None:
        labels, geometry, names = read_labels(args.labels,
                                              default_color_table=color_table(args))
        if not names:  # a prediction written elsewhere: the image's dataset.json names
            found = find_dataset_json(args.path)
            names = dataset_names(load_dataset_json(found)) if found else {}
        names = {**case.structures, **names}
        payload["labels"] = label_rows(labels, geometry.spacing, names)
        problem = _alignment(case, labels.shape, geometry)
        payload["aligned"] = problem is None
        payload["problem"] = problem
    emit(args, payload, _text(payload))
    return 1 if problem else 0


def _text(p: dict) -> str:
    def nums(v: list) -> str:
        return "(" + ", ".join(f"{x:g}" for x in v) + ")"

    lines = [
        f"{p['path']}",
        f"  kind       {p['kind']} ({p['axes']})",
        f"  shape      {tuple(p['shape'])}",
        f"  dtype      {p['dtype']}",
        f"  modality   {p['modality']}",
        f"  spacing    {nums(p['spacing'])} mm",
        f"  origin     {nums(p['origin'])} mm (LPS)",
        f"  direction  {nums(p['direction'])}",
        f"  intensity  {p['intensity_range'][0]} .. {p['intensity_range'][1]}",
    ]
    if p["labels"] is not None:
        rows = [[r["id"], r["name"], r["voxels"], r["volume_ml"]] for r in p["labels"]]
        lines += ["", format_table(["id", "name", "voxels", "volume_ml"], rows, digits=2)]
        lines += ["", "labels line up with the image" if p["aligned"] else
                  f"labels do NOT line up: {p['problem']}"]
    return "\n".join(lines)
