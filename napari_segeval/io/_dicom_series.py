"""Grouping DICOM images into series, splitting each into stacks that form one grid,
checking each stack from its headers and choosing one (docs/design.md, "DICOM series").
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from napari_segeval._errors import ReadError
from napari_segeval.io import _dicom_files
from napari_segeval.io._dicom_geometry import (
    Unit,
    group_value,
    is_colour,
    is_time_modality,
    number,
    plane_name,
    units_of,
)
from napari_segeval.io.case import Geometry

#: Tolerances: orientation cosines, pixel size (mm), duplicate position (mm).
_ORIENT_TOL, _SPACING_TOL, _SAME_POSITION = 1e-3, 1e-4, 1e-3


@dataclass
class Plan:
    """How to assemble one stack: images in array order, geometry, axes, warnings."""

    order: list[Unit]
    geometry: Geometry
    axes: str
    has_geometry: bool
    warnings: list[str] = field(default_factory=list)


@dataclass
class SeriesInfo:
    """One readable stack of a DICOM folder, as listed by :func:`list_series`."""

    id: str
    uid: str
    number: int | None
    modality: str
    description: str
    n_images: int
    rows: int
    columns: int
    orientation: str
    n_files: int
    split: str | None = None  # why the series was split into stacks
    problem: str | None = None  # why this stack cannot be read
    units: list[Unit] = field(default_factory=list, repr=False)
    plan: Plan | None = field(default=None, repr=False)

    def describe(self) -> str:
        """One line: id, modality, size, orientation, description, problem.

        Examples
        --------
        >>> SeriesInfo("1.2.3", "1.2.3", 2, "CT", "abdomen", 40, 512, 512, "axial", 40).describe()
        "1.2.3: CT, 40 images of 512 x 512, axial, series 2 'abdomen'"
        """
        what = f"{self.n_images} image{'s' if self.n_images != 1 else ''}"
        text = (
            f"{self.id}: {self.modality or '?'}, {what} of {self.rows} x {self.columns}, "
            f"{self.orientation}"
        )
        if self.number is not None:
            text += f", series {self.number}"
        if self.description:
            text += f" {self.description!r}"
        if self.problem:
            text += f" -- cannot be read: {self.problem}"
        return text

    def to_dict(self) -> dict:
        """Plain-JSON form for ``segeval inspect --json``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.repr}


def _close(a, b, tol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(np.allclose(a, b, atol=tol, rtol=0))


def _key(u: Unit) -> dict:
    ds = u.ds
    own = u.frame is not None or (u.position is None and is_time_modality(ds))
    if u.frame is None:
        echo, time = ds.get("EchoNumbers", ""), ds.get("TemporalPositionIdentifier", "")
        stack = ""
    else:
        echo = ""
        time = group_value(ds, u.frame, "FrameContentSequence", "TemporalPositionIndex")
        stack = group_value(ds, u.frame, "FrameContentSequence", "StackID")
    return {
        # frames of one object, and separate ultrasound/endoscopy images, stand alone
        "objects": str(ds.get("SOPInstanceUID", u.path)) if own else None,
        "orientation": u.orientation,
        "image size": (ds.get("Rows"), ds.get("Columns"), ds.get("SamplesPerPixel", 1)),
        "colour": is_colour(ds),
        "pixel size": u.spacing,
        "echo number": str(echo or ""),
        "time point": str(time or ""),
        "stack": str(stack or ""),
    }


def _same(k1: dict, k2: dict) -> list[str]:
    """Aspects in which two stack keys differ."""
    tol = {"orientation": _ORIENT_TOL, "pixel size": _SPACING_TOL}
    return [n for n, a in k1.items() if not (_close(a, k2[n], tol[n]) if n in tol else a == k2[n])]


def _stacks(units: list[Unit]) -> list[list[Unit]]:
    stacks: list[tuple[dict, list[Unit]]] = []
    for u in units:
        k = _key(u)
        for key, members in stacks:
            if not _same(key, k):
                members.append(u)
                break
        else:
            stacks.append((k, [u]))
    return [m for _, m in stacks]


def _info(uid: str, stack: list[Unit], idx: int | None, split: str | None) -> SeriesInfo:
    ds = stack[0].ds
    info = SeriesInfo(
        id=uid if idx is None else f"{uid}#{idx}",
        uid=uid,
        number=number(ds.get("SeriesNumber"), int),
        modality=str(ds.get("Modality", "") or "").strip(),
        description=str(ds.get("SeriesDescription", "") or "").strip(),
        n_images=len(stack),
        rows=number(ds.get("Rows"), int, 0),
        columns=number(ds.get("Columns"), int, 0),
        orientation=plane_name(stack[0].normal),
        n_files=len({u.path for u in stack}),
        split=split,
        units=stack,
    )
    try:
        info.plan = plan(stack)
    except ValueError as exc:
        info.problem = str(exc)
    return info


def series_of(headers: list) -> tuple[list[SeriesInfo], list[str]]:
    """Checked stacks of parsed ``(path, dataset)`` headers, and one line per imageless header."""
    by_uid: dict[str, list[Unit]] = {}
    broken: list[str] = []
    for path, ds in headers:
        try:
            units = units_of(path, ds)
        except ValueError as exc:
            broken.append(f"{path}: {exc}")
            continue
        uid = str(ds.get("SeriesInstanceUID", "") or "").strip() or "(no series UID)"
        by_uid.setdefault(uid, []).extend(units)
    if broken and not by_uid:
        raise ReadError(broken[0])
    out = []
    for uid, units in by_uid.items():
        stacks = _stacks(units)
        split = None
        if len(stacks) > 1:
            aspects = sorted({a for s in stacks[1:] for a in _same(_key(stacks[0][0]), _key(s[0]))})
            split = (
                f"series {uid} mixes images of different {', '.join(aspects)}; "
                f"split into {len(stacks)} stacks"
            )
        for i, stack in enumerate(stacks, 1):
            out.append(_info(uid, stack, i if len(stacks) > 1 else None, split))
    out.sort(key=lambda s: (s.number if s.number is not None else 1 << 30, s.uid, s.id))
    return out, broken


def list_series(path: str | Path) -> list[SeriesInfo]:
    """Every stack of DICOM images under ``path`` (folder, DICOMDIR or file), checked.

    Raises :class:`ReadError` when ``path`` holds no DICOM image.
    """
    return scan(path)[0]


def scan(path: str | Path) -> tuple[list[SeriesInfo], list[str], list[str]]:
    """:func:`list_series` plus the files skipped (not images) and unreadable, one line each."""
    p = Path(path)
    headers, skipped, broken = _dicom_files.find(p)
    if not headers:
        if broken:
            raise ReadError(broken[0])
        what = skipped[0] if skipped else "no DICOM images found"
        raise ReadError(f"{p}: {what.split(': ', 1)[-1] if p.is_file() else what}")
    series, bad_headers = series_of(headers)
    return series, skipped, broken + bad_headers


def choose(series: list[SeriesInfo], wanted: str | None, where: Path) -> SeriesInfo:
    """The stack ``wanted`` names (UID or ``UID#k``), else the largest."""
    if wanted is None:
        return max(series, key=lambda s: (s.n_images, s.rows * s.columns, -series.index(s)))
    exact = [s for s in series if s.id == wanted]
    if exact:
        return exact[0]
    parts = [s for s in series if s.uid == wanted]
    if len(parts) == 1:
        return parts[0]
    if parts:
        raise ReadError(f"{where}: {parts[0].split}; pick one of {', '.join(s.id for s in parts)}")
    known = ", ".join(s.id for s in series)
    raise ReadError(f"{where}: no series {wanted} here (series: {known})")


# --- checking one stack (headers only) ------------------------------------------------


def plan(stack: list[Unit]) -> Plan:
    """Order and geometry of one stack; ValueError (the reason) when it is not a grid."""
    first = stack[0]
    warnings = list(dict.fromkeys(n for u in stack for n in u.notes))
    positioned = all(u.position is not None and u.orientation is not None for u in stack)
    if len(stack) == 1:
        return _plan_single(first, positioned, warnings)
    if is_colour(first.ds):
        return _plan_colour(stack, warnings, positioned)
    if first.frame is not None and is_time_modality(first.ds) and not positioned:
        return _plan_frames(stack, warnings)
    if positioned and first.spacing is not None:
        return _plan_positioned(stack, warnings)
    return _plan_unpositioned(stack, warnings, positioned)


def _by_instance(stack: list[Unit]) -> list[Unit]:
    return sorted(stack, key=lambda u: (number(u.ds.get("InstanceNumber"), int) or 0, u.path.name))


def _plan_single(u: Unit, positioned: bool, warnings: list[str]) -> Plan:
    if positioned and u.spacing is not None and u.position is not None:
        thick = u.thickness or u.between or 1.0
        plane = Geometry((thick, *u.spacing), tuple(u.position), tuple(u.direction.ravel()))
        return Plan([u], Geometry.of_plane(plane), "yx", True, warnings)
    return Plan([u], Geometry.identity(2, u.spacing), "yx", u.spacing is not None, warnings)


def _plan_frames(stack: list[Unit], warnings: list[str]) -> Plan:
    u = stack[0]
    sp = u.spacing or (1.0, 1.0)
    d = u.direction if u.orientation is not None else np.eye(3)
    origin = tuple(u.position) if u.position is not None else (0.0, 0.0, 0.0)
    g = Geometry((1.0, *sp), origin, tuple(d.ravel()))
    return Plan(list(stack), g, "tyx", u.spacing is not None, warnings)


def _plan_colour(stack: list[Unit], warnings: list[str], positioned: bool) -> Plan:
    """Colour images as RGB frames (``"tyx"``; the colour axis is added when read)."""
    if positioned and stack[0].spacing is not None:
        p = _plan_positioned(stack, warnings)  # slices of a colour rendering keep their placement
    else:
        if stack[0].frame is None:
            stack = _by_instance(stack)
            warnings.append(
                "colour images without slice positions: shown as frames ordered by InstanceNumber"
            )
        p = _plan_frames(stack, warnings)
    p.axes = "tyx"
    return p


def _plan_positioned(stack: list[Unit], warnings: list[str]) -> Plan:
    first = stack[0]
    normal = first.normal
    # called with positioned units (position and orientation) and an in-plane spacing
    assert normal is not None and first.spacing is not None
    pos = np.array([u.position for u in stack])
    along = pos @ normal
    order = np.argsort(along, kind="stable")
    pos, along = pos[order], along[order]
    steps = np.diff(along)
    if steps.min() < _SAME_POSITION:
        n_pos = int(np.sum(steps >= _SAME_POSITION)) + 1
        raise ValueError(
            f"{len(stack)} images at only {n_pos} slice position{'s' if n_pos > 1 else ''}: "
            "the series holds several acquisitions (echoes, time points or repeats) that "
            "cannot be told apart"
        )
    offsets = pos - pos[0]
    inplane = np.linalg.norm(offsets - np.outer(offsets @ normal, normal), axis=1)
    tol = 0.01 + 1e-3 * np.abs(along - along[0])
    if np.any(inplane > tol):
        k = int(np.argmax(inplane - tol))
        angle = np.degrees(np.arctan2(inplane[k], abs(along[k] - along[0])))
        raise ValueError(
            f"slices are not stacked along their normal (tilted by {angle:.2g} degrees, e.g. "
            "a CT gantry tilt); a tilted stack is not a grid without resampling"
        )
    if steps.max() - steps.min() > 1e-3 + 0.01 * np.median(steps):
        raise ValueError(
            f"slice spacing is not uniform ({steps.min():g} to {steps.max():g} mm); "
            "slices are missing or the series is mixed"
        )
    dz = float((along[-1] - along[0]) / (len(stack) - 1))
    between = first.between
    if first.frame is not None and between and abs(between - dz) > 1e-3 + 0.01 * dz:
        warnings.append(
            f"SpacingBetweenSlices says {between:g} mm but the slice positions "
            f"are {dz:g} mm apart; the positions are used"
        )
    g = Geometry((dz, *first.spacing), tuple(pos[0]), tuple(first.direction.ravel()))
    return Plan([stack[i] for i in order], g, "zyx", True, warnings)


def _plan_unpositioned(stack: list[Unit], warnings: list[str], positioned: bool) -> Plan:
    first = stack[0]
    if first.frame is None:
        order = _by_instance(stack)
        how = "ordered by InstanceNumber"
    else:
        order, how = list(stack), "in frame order"
    dz = first.between or first.thickness
    if first.spacing is None:
        warnings.append(f"slices {how}; the volume is shown in pixel units")
        return Plan(order, Geometry.identity(3), "zyx", False, warnings)
    if dz is None:
        warnings.append(
            f"no slice positions or slice spacing in the header: slices {how}, "
            "1 mm apart in the display (not a measured spacing)"
        )
        dz = 1.0
    elif not positioned:
        name = "SpacingBetweenSlices" if first.between else "SliceThickness"
        warnings.append(
            f"no slice positions in the header: slices {how}, {dz:g} mm apart "
            f"({name}); the volume has no patient placement"
        )
    return Plan(order, Geometry.identity(3, (dz, *first.spacing)), "zyx", True, warnings)
