"""Geometry of DICOM images from their headers, as the header says -- never invented
(orientation, position and pixel-size rules: docs/design.md, "Reading files"). Invalid
values become warnings phrased without file names, so a series repeats each once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval.io._quiet import one_line_errors, quiet

#: Relative tolerance on unit length and right angle of the orientation vectors.
ORIENTATION_TOL = 0.01


@dataclass
class Unit:
    """One 2D image of a DICOM object and what its header says about its placement."""

    path: Path
    frame: int | None  # frame of a multi-frame object, None for a single-frame file
    ds: Any
    position: np.ndarray | None = None
    orientation: np.ndarray | None = None  # (2, 3): row and column direction cosines
    spacing: tuple[float, float] | None = None  # (between rows, between columns) mm
    spacing_source: str = "none"
    thickness: float | None = None
    between: float | None = None  # SpacingBetweenSlices
    rescale: tuple[float, float] = (1.0, 0.0)
    notes: list[str] = field(default_factory=list)

    @property
    def normal(self) -> np.ndarray | None:
        """Slice normal (row x column), or None without a valid orientation."""
        if self.orientation is None:
            return None
        return np.cross(self.orientation[0], self.orientation[1])

    @property
    def direction(self) -> np.ndarray:
        """ITK 3x3 direction: columns row cosine, column cosine, normal."""
        normal = self.normal
        if self.orientation is None or normal is None:
            raise ValueError(f"{self.path}: no image orientation")
        return np.column_stack([self.orientation[0], self.orientation[1], normal])


def _txt(values) -> str:
    try:
        return "(" + ", ".join(f"{float(v):g}" for v in values) + ")"
    except (TypeError, ValueError):
        return repr(str(values))


def _floats(values, n: int) -> np.ndarray | None:
    try:
        v = np.asarray(
            [float(x) for x in (values if not isinstance(values, str) else values.split("\\"))],
            dtype=float,
        )
    except (TypeError, ValueError):
        return None
    return v if v.size == n and np.all(np.isfinite(v)) else None


def number(value, cast: Any = float, default: Any = None) -> Any:
    """``cast(value)``, or ``default`` when ``value`` is not a number."""
    try:
        return cast(value)
    except (TypeError, ValueError):
        return default


def _positive(value) -> float | None:
    v = number(value)
    return v if v is not None and np.isfinite(v) and v > 0 else None


def orientation(values) -> tuple[np.ndarray | None, str | None]:
    """Orthonormal (2, 3) row/column cosines from ``ImageOrientationPatient``, or why not."""
    v = _floats(values, 6)
    bad = f"ImageOrientationPatient {_txt(values)} is not two unit vectors at right angles"
    if v is None:
        return None, bad
    r, c = v[:3], v[3:]
    nr, nc = np.linalg.norm(r), np.linalg.norm(c)
    if (
        abs(nr - 1) > ORIENTATION_TOL
        or abs(nc - 1) > ORIENTATION_TOL
        or abs(r @ c) > ORIENTATION_TOL * nr * nc
    ):
        return None, bad
    r = r / nr
    c = c - (c @ r) * r
    return np.stack([r, c / np.linalg.norm(c)]), None


def _item(seq) -> Any:
    try:
        return seq[0] if seq is not None and len(seq) else None
    except TypeError:
        return None


def group_value(ds, frame: int | None, sequence: str, name: str, top: bool = False):
    """``name`` from the per-frame, then shared functional group ``sequence``, else (with
    ``top``) the top-level element, else None."""
    per = ds.get("PerFrameFunctionalGroupsSequence")
    own = per[frame] if frame is not None and per is not None and frame < len(per) else None
    for src in (own, _item(ds.get("SharedFunctionalGroupsSequence"))):
        item = _item(src.get(sequence)) if src is not None else None
        if item is not None and name in item:
            value = item.get(name)
            return ds.get(name) if top and value is None else value
    return ds.get(name) if top else None


def _f0(value) -> float:
    return number(value, float, 0.0)


def ultrasound_spacing(ds) -> tuple[tuple[float, float] | None, list[str]]:
    """Pixel size (row, column) in mm from the ultrasound regions calibrated in cm."""
    regions = ds.get("SequenceOfUltrasoundRegions")
    if not regions:
        return None, []
    good = []
    for i, reg in enumerate(regions):
        dx, dy = (_positive(abs(_f0(reg.get(f"PhysicalDelta{a}")))) for a in "XY")
        cm = reg.get("PhysicalUnitsXDirection") == 3 and reg.get("PhysicalUnitsYDirection") == 3
        if cm and dx and dy:
            w = _f0(reg.get("RegionLocationMaxX1")) - _f0(reg.get("RegionLocationMinX0")) + 1
            h = _f0(reg.get("RegionLocationMaxY1")) - _f0(reg.get("RegionLocationMinY0")) + 1
            good.append((w * h, i, round(dy * 10.0, 9), round(dx * 10.0, 9)))
    if not good:
        return None, ["the ultrasound regions carry no calibration in cm"]
    _, i, sy, sx = max(good, key=lambda g: (g[0], -g[1]))
    notes = []
    if len({(g[2], g[3]) for g in good}) > 1:
        notes.append(
            f"{len(good)} ultrasound regions have different pixel sizes; region {i + 1} "
            f"(the largest, {sy:g} x {sx:g} mm) is used"
        )
    return (sy, sx), notes


def _pixel_size(value) -> tuple[float, float] | None:
    v = _floats(value, 2)
    return (float(v[0]), float(v[1])) if v is not None and np.all(v > 0) else None


def pixel_spacing(ds, frame: int | None) -> tuple[tuple[float, float] | None, str, list[str]]:
    """Pixel size (row, column) mm, where it came from, and notes on invalid values."""
    ps = group_value(ds, frame, "PixelMeasuresSequence", "PixelSpacing", top=True)
    if (size := _pixel_size(ps)) is not None:
        return size, "PixelSpacing", []
    invalid = None if ps is None else f"PixelSpacing {_txt(ps)} is not a positive pixel size"
    imager = _pixel_size(ds.get("ImagerPixelSpacing"))
    found, notes = (imager, []) if imager else ultrasound_spacing(ds)
    if found is not None:
        used = "ImagerPixelSpacing is" if imager else "the ultrasound region calibration is"
        notes += [f"{invalid}; {used} used"] if invalid else []
        return found, "ImagerPixelSpacing" if imager else "ultrasound regions", notes
    if invalid:
        notes.append(f"{invalid}: the image is shown in pixel units, not mm")
    elif any(ds.get(f"Image{k}Patient") is not None for k in ("Orientation", "Position")):
        notes.append("no PixelSpacing in the header: the image is shown in pixel units, not mm")
    return None, "none", notes


def rescale(ds, frame: int | None) -> tuple[float, float]:
    """(slope, intercept) of the modality LUT; RT dose: (DoseGridScaling, 0)."""
    slope = group_value(ds, frame, "PixelValueTransformationSequence", "RescaleSlope")
    icpt = group_value(ds, frame, "PixelValueTransformationSequence", "RescaleIntercept")
    if slope is None:
        slope, icpt = ds.get("RescaleSlope"), ds.get("RescaleIntercept")
    s = _f0(slope) if slope is not None else 1.0
    b = _f0(icpt) if icpt is not None else 0.0
    if ds.get("DoseGridScaling") is not None:
        s *= _f0(ds.get("DoseGridScaling"))
    return (s if s != 0 else 1.0), b


def n_frames(ds) -> int:
    """``NumberOfFrames`` (1 when absent); raises ValueError when it is not a count."""
    value = ds.get("NumberOfFrames")
    if value is None or str(value).strip() == "":
        return 1
    n = number(value, int, 0)
    if n < 1:
        raise ValueError(f"NumberOfFrames {str(value)!r} is not a positive count")
    return n


def units_of(path: Path, ds) -> list[Unit]:
    """The 2D images of one DICOM object with their header geometry."""
    n = n_frames(ds)
    multi = n > 1 or "PerFrameFunctionalGroupsSequence" in ds
    offsets = _floats(ds.get("GridFrameOffsetVector"), n) if "GridFrameOffsetVector" in ds else None
    units = []
    for k in range(n):
        frame = k if multi else None
        u = Unit(path, frame, ds)
        iop = group_value(ds, frame, "PlaneOrientationSequence", "ImageOrientationPatient", True)
        if iop is not None:
            u.orientation, why = orientation(iop)
            if why:
                u.notes.append(why + ": the image has no patient placement")
        ipp = group_value(ds, frame, "PlanePositionSequence", "ImagePositionPatient", True)
        if ipp is not None:
            u.position = _floats(ipp, 3)
            if u.position is None:
                u.notes.append(f"ImagePositionPatient {_txt(ipp)} is not a position")
        u.spacing, u.spacing_source, notes = pixel_spacing(ds, frame)
        u.notes += notes
        measures = "PixelMeasuresSequence"
        u.thickness = _positive(group_value(ds, frame, measures, "SliceThickness", True))
        u.between = _positive(group_value(ds, frame, measures, "SpacingBetweenSlices", True))
        u.rescale = rescale(ds, frame)
        units.append(u)
    _legacy_positions(units, ds, offsets)
    return units


def _legacy_positions(units: list[Unit], ds, offsets: np.ndarray | None) -> None:
    """Frame positions of a legacy multi-frame volume (RT dose offsets, NM spacing)."""
    if len(units) < 2 or "PerFrameFunctionalGroupsSequence" in ds:
        return
    first = units[0]
    if first.position is None or first.orientation is None:
        return
    if offsets is not None:
        steps = offsets - offsets[0]
    elif first.between is not None and not is_time_modality(ds):
        steps = np.arange(len(units)) * first.between
    else:
        for u in units:
            u.position = None  # frames of one object share the top-level position
        return
    for u, s in zip(units, steps):
        u.position = first.position + s * first.normal


#: DICOM modalities whose multi-frame objects are time series rather than volumes.
TIME_MODALITIES = {"US", "ES", "XA", "RF", "XC", "DMS"}


def is_time_modality(ds) -> bool:
    """True for modalities whose frames are successive times (ultrasound, endoscopy, X-ray)."""
    return str(ds.get("Modality", "") or "").strip().upper() in TIME_MODALITIES


def plane_name(normal: np.ndarray | None) -> str:
    """``axial``, ``coronal``, ``sagittal`` or ``oblique`` from a slice normal."""
    if normal is None:
        return "unknown"
    a = np.abs(np.asarray(normal, float))
    k = int(np.argmax(a))
    if a[k] < 1 - 1e-4:
        return "oblique"
    return ("sagittal", "coronal", "axial")[k]


# --- colour ---------------------------------------------------------------------------

PALETTE = "PALETTE COLOR"


def photometric(ds) -> str:
    """``PhotometricInterpretation`` upper-cased and stripped (``""`` when absent)."""
    return str(ds.get("PhotometricInterpretation", "") or "").strip().upper()


def is_colour(ds) -> bool:
    """True for images that open as RGB: three samples per pixel, or a palette."""
    return number(ds.get("SamplesPerPixel", 1), int, 1) > 1 or photometric(ds) == PALETTE


def samples_stored(ds) -> int:
    """Samples stored per pixel uncompressed: 2 for ``YBR_FULL_422``, else ``SamplesPerPixel``."""
    spp = number(ds.get("SamplesPerPixel", 1), int, 1)
    return 2 if spp == 3 and photometric(ds) == "YBR_FULL_422" else spp


def palette_rgb(indices: np.ndarray, ds, path: Path) -> np.ndarray:
    """``(..., 3)`` uint8 RGB of palette ``indices``; ReadError without a usable palette."""
    from pydicom.pixels import apply_color_lut

    with quiet(), one_line_errors(f"{path}: PALETTE COLOR image has no usable palette"):
        rgb = apply_color_lut(indices, ds)
    rgb = rgb[..., :3]  # an alpha palette is not shown
    if rgb.dtype == np.uint16:
        rgb = rgb.astype(np.uint8) if int(rgb.max(initial=0)) < 256 else (rgb >> 8).astype(np.uint8)
    return np.ascontiguousarray(rgb)
