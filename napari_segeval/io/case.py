"""The :class:`Case` record and its :class:`Geometry` (ITK's LPS, arrays slowest axis
first; a single slice placed in 3D keeps that placement in ``Geometry.plane``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._names import unnamed_label

#: Largest deviation from orthonormality accepted in a direction matrix.
ORTHO_TOL = 1e-4

MODALITIES: tuple[str, ...] = ("CT", "MR", "US", "endoscopy", "dermoscopy", "PET", "other")

#: Axis meanings: ``"zyx"`` volume, ``"tyx"`` video, ``"yx"`` grey 2D, ``"yxc"`` colour 2D,
#: ``"tyxc"`` colour video, ``"tzyx"`` time series of volumes (4D NIfTI: fMRI, DWI, cine),
#: ``"czyx"`` multi-channel volume (MR sequences of one patient: MSD BrainTumour, Prostate;
#: only made on request, see :func:`napari_segeval.io.read_channels`); each with its kind.
_KIND_OF_AXES = {
    **dict.fromkeys(("zyx", "czyx"), "volume"),
    **dict.fromkeys(("tyx", "tyxc"), "video"),
    **dict.fromkeys(("yx", "yxc"), "image"),
    "tzyx": "series",
}
AXES: tuple[str, ...] = tuple(_KIND_OF_AXES)
#: What a case is, as the viewer and the command line name it (:func:`kind_of_axes`).
KINDS: tuple[str, ...] = tuple(dict.fromkeys(_KIND_OF_AXES.values()))


def kind_of_axes(axes: str) -> str:
    """``"volume"``, ``"video"``, ``"image"`` or ``"series"`` for a case's axes."""
    try:
        return _KIND_OF_AXES[axes]
    except KeyError:
        raise ValueError(
            f"unknown axes {axes!r}: expected one of {', '.join(sorted(_KIND_OF_AXES))}"
        ) from None


@dataclass(frozen=True)
class Geometry:
    """Where the voxels of an array lie in physical space.

    Parameters
    ----------
    spacing
        Voxel size in mm per spatial array axis, slowest first (a channel has none).
    origin
        LPS position of the centre of voxel ``(0, ...)`` in ITK ``(x, y[, z])`` order.
    direction
        Row-major flattened ITK direction matrix (``ndim x ndim``); its column ``j`` is
        ITK index axis ``j`` (the array axes reversed).
    plane
        2D only: the slice's 3D placement; ``None`` when it has none (PNG, ultrasound).

    Examples
    --------
    >>> g = Geometry.identity(3, spacing=(2.5, 0.8, 0.8))
    >>> g.spacing
    (2.5, 0.8, 0.8)
    >>> g.ndim
    3
    """

    spacing: tuple[float, ...]
    origin: tuple[float, ...]
    direction: tuple[float, ...]
    plane: Geometry | None = None

    def __post_init__(self) -> None:
        n = len(self.spacing)
        object.__setattr__(self, "spacing", tuple(float(s) for s in self.spacing))
        object.__setattr__(self, "origin", tuple(float(o) for o in self.origin))
        object.__setattr__(
            self, "direction", tuple(float(d) + 0.0 for d in np.ravel(self.direction))
        )  # no -0
        if len(self.origin) != n or len(self.direction) != n * n:
            raise ValueError(
                f"geometry of {n} axes needs {n} origin values and {n * n} direction "
                f"values, got {len(self.origin)} and {len(self.direction)}"
            )
        if any(not np.isfinite(s) or s <= 0 for s in self.spacing):
            raise ValueError(f"spacing must be positive and finite, got {self.spacing}")
        if self.plane is not None and (n != 2 or self.plane.ndim != 3):
            raise ValueError("only a 2D geometry has a 3D plane placement")

    @classmethod
    def of_plane(cls, plane: Geometry) -> Geometry:
        """The 2D geometry of a one-slice 3D grid ``plane`` (kept as ``.plane``).

        Examples
        --------
        >>> sag = Geometry((1.0, 0.5, 0.5), (10.0, 20.0, 30.0), (0, 0, 1, 1, 0, 0, 0, -1, 0))
        >>> g = Geometry.of_plane(sag)
        >>> g.spacing, g.origin, g.direction, g.plane == sag
        ((0.5, 0.5), (0.0, 0.0), (1.0, 0.0, 0.0, 1.0), True)
        >>> ax = Geometry.of_plane(Geometry((2.0, 0.5, 0.5), (1.0, 2.0, 3.0), (-1, 0, 0, 0, -1, 0, 0, 0, 1)))
        >>> ax.origin, ax.direction
        ((1.0, 2.0), (-1.0, 0.0, 0.0, -1.0))
        """
        d = plane.direction_matrix
        if abs(abs(d[2, 2]) - 1.0) < ORTHO_TOL:  # axial: normal along +-z
            return cls(plane.spacing[1:], plane.origin[:2], tuple(d[:2, :2].ravel()), plane)
        return cls(plane.spacing[1:], (0.0, 0.0), (1.0, 0.0, 0.0, 1.0), plane)

    def sub(self, n: int) -> Geometry:
        """Geometry of the last ``n`` array axes (drop leading time/slice axes).

        Examples
        --------
        >>> g = Geometry((1.0, 3.0, 0.5, 0.5), (1, 2, 3, 0), tuple(np.eye(4).ravel()))
        >>> g.sub(3).spacing, g.sub(3).origin
        ((3.0, 0.5, 0.5), (1.0, 2.0, 3.0))
        """
        d = self.direction_matrix[:n, :n]
        return Geometry(self.spacing[-n:], self.origin[:n], tuple(d.ravel()))

    def stacked(self) -> Geometry:
        """Geometry with a new slowest array axis (time, channel): spacing 1, origin 0."""
        d = np.eye(self.ndim + 1)
        d[: self.ndim, : self.ndim] = self.direction_matrix
        return Geometry((1.0, *self.spacing), (*self.origin, 0.0), tuple(d.ravel()))

    def is_orthonormal(self, tol: float = ORTHO_TOL) -> bool:
        """True when the direction matrix (and the plane's) is orthonormal within ``tol``."""
        d = self.direction_matrix
        ok = bool(np.allclose(d.T @ d, np.eye(self.ndim), atol=tol))
        return ok and (self.plane is None or self.plane.is_orthonormal(tol))

    @classmethod
    def identity(cls, ndim: int, spacing: tuple[float, ...] | None = None) -> Geometry:
        """Geometry with unit (or given) spacing, zero origin and identity direction."""
        sp = tuple(spacing) if spacing is not None else (1.0,) * ndim
        return cls(sp, (0.0,) * ndim, tuple(np.eye(ndim).ravel()))

    @property
    def ndim(self) -> int:
        """Number of spatial axes."""
        return len(self.spacing)

    @property
    def direction_matrix(self) -> np.ndarray:
        """The direction as an ``(ndim, ndim)`` array (ITK convention)."""
        return np.asarray(self.direction, dtype=float).reshape(self.ndim, self.ndim)

    def affine(self) -> np.ndarray:
        """Homogeneous matrix ``A`` with ``A @ [k, j, i, 1] = [x, y, z, 1]`` (LPS mm)."""
        n = self.ndim
        itk_spacing = np.asarray(self.spacing[::-1])
        m = self.direction_matrix * itk_spacing[None, :]
        out = np.eye(n + 1)
        out[:n, :n] = m[:, ::-1]  # array axis a is ITK index axis n-1-a
        out[:n, n] = self.origin
        return out

    def matches(self, other: Geometry, atol: float = 1e-4) -> bool:
        """True when both describe the same grid placement within ``atol`` (mm)."""
        if self.ndim != other.ndim:
            return False
        if self.plane is not None and other.plane is not None:
            return self.plane.matches(other.plane, atol)
        return bool(
            np.allclose(self.spacing, other.spacing, rtol=1e-5, atol=atol)
            and np.allclose(self.origin, other.origin, rtol=1e-5, atol=atol)
            and np.allclose(self.direction, other.direction, atol=1e-4)
        )

    def to_dict(self) -> dict:
        """Plain-JSON form (lists of floats), e.g. for napari layer metadata."""
        out: dict[str, Any] = {
            "spacing": list(self.spacing),
            "origin": list(self.origin),
            "direction": list(self.direction),
        }
        if self.plane is not None:
            out["plane"] = self.plane.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Geometry:
        """Inverse of :meth:`to_dict`."""
        plane = cls.from_dict(data["plane"]) if data.get("plane") else None
        return cls(tuple(data["spacing"]), tuple(data["origin"]), tuple(data["direction"]), plane)

    def describe(self) -> str:
        """Short human-readable text used in error messages."""
        sp = ", ".join(f"{s:g}" for s in self.spacing)
        where, origin = ("slice ", self.plane.origin) if self.plane else ("", self.origin)
        return f"spacing ({sp}) {where}origin ({', '.join(f'{o:g}' for o in origin)})"


@dataclass
class Case:
    """One image with optional reference labels and its true geometry.

    Parameters
    ----------
    image
        Intensities in the axis order named by ``axes`` (one of :data:`AXES`).
    geometry
        Placement of the spatial axes.
    axes, modality
        One of :data:`AXES`; one of :data:`MODALITIES` (a reader's guess).
    labels
        Integer label map on the same spatial grid.
    structures
        Names of label ids (background ``0`` excluded).
    image_path, labels_path
        Where the arrays came from.
    meta
        Anything else a reader learnt (frame rate, DICOM series UID, ...).

    Examples
    --------
    >>> import numpy as np
    >>> c = Case(np.zeros((4, 5, 6), np.float32), Geometry.identity(3), axes="zyx")
    >>> c.spatial_shape
    (4, 5, 6)
    """

    image: np.ndarray
    geometry: Geometry
    axes: str = "zyx"
    modality: str = "other"
    labels: np.ndarray | None = None
    structures: dict[int, str] = field(default_factory=dict)
    image_path: Path | None = None
    labels_path: Path | None = None
    meta: dict = field(default_factory=dict)

    @property
    def spatial_shape(self) -> tuple[int, ...]:
        """Shape without a trailing colour axis or a leading channel axis."""
        if self.axes.endswith("c"):
            return tuple(self.image.shape[:-1])
        if self.axes.startswith("c"):
            return tuple(self.image.shape[1:])
        return tuple(self.image.shape)

    @property
    def spacing(self) -> tuple[float, ...]:
        """Spacing per spatial array axis in mm."""
        return self.geometry.spacing

    @property
    def is_rgb(self) -> bool:
        """True for images with a trailing colour axis."""
        return self.axes.endswith("c")

    @property
    def kind(self) -> str:
        """``"volume"``, ``"video"``, ``"image"`` or ``"series"`` (:func:`kind_of_axes`)."""
        return kind_of_axes(self.axes)

    @property
    def is_multichannel(self) -> bool:
        """True for a multi-channel volume (``"czyx"``: channel axis first)."""
        return self.axes == "czyx"

    @property
    def n_channels(self) -> int:
        """Image channels: ``C`` for ``"czyx"``, else 1 (colour is not a channel)."""
        return int(self.image.shape[0]) if self.is_multichannel else 1

    @property
    def is_time_series(self) -> bool:
        """True for a time series of volumes (``"tzyx"``, e.g. a 4D NIfTI)."""
        return self.axes == "tzyx"

    def structure_name(self, label: int) -> str:
        """Name of ``label``, or ``"label <id>"`` when unnamed."""
        return self.structures.get(int(label), unnamed_label(label))
