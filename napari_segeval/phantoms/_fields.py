"""Building blocks of the phantoms: smooth random fields and deformed ellipsoids."""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence

import numpy as np
from scipy import ndimage

from napari_segeval.io.case import Case


def smooth_field(
    rng: np.random.Generator, shape: Sequence[int], coarse: Sequence[int]
) -> np.ndarray:
    """Smooth random ``float32`` field of unit-ish amplitude: normal values on a ``coarse``
    grid (>= 2 per axis; fewer nodes, smoother) upsampled by cubic splines."""
    coarse = tuple(max(2, int(c)) for c in coarse)
    values = rng.standard_normal(coarse)
    factors = [s / c for s, c in zip(shape, coarse)]
    out = ndimage.zoom(values, factors, order=3, mode="nearest", grid_mode=True)
    return np.ascontiguousarray(out[tuple(slice(0, s) for s in shape)], dtype=np.float32)


def ellipsoid_level(
    coords: Sequence[np.ndarray],
    centre: Sequence[float],
    radii: Sequence[float],
    angle: float = 0.0,
) -> np.ndarray:
    """Implicit ellipsoid ``sum(((p - c) / r) ** 2)``: below 1 inside, above 1 outside.

    ``coords`` (mm, broadcastable), ``centre`` and ``radii`` slowest axis first;
    ``angle`` (radians) rotates the last two axes.
    """
    d = [np.asarray(c, dtype=np.float32) - np.float32(m) for c, m in zip(coords, centre)]
    if angle:
        ca, sa = np.float32(np.cos(angle)), np.float32(np.sin(angle))
        a, b = d[-2], d[-1]
        d[-2], d[-1] = ca * a - sa * b, sa * a + ca * b
    return functools.reduce(operator.add, [(di / np.float32(r)) ** 2 for di, r in zip(d, radii)])


def mm_grid(shape: Sequence[int], spacing: Sequence[float]) -> tuple[np.ndarray, ...]:
    """Open grids of physical coordinates (mm), centred on the middle of the array."""
    mm = [
        (np.arange(s, dtype=np.float32) - np.float32((s - 1) / 2)) * np.float32(sp)
        for s, sp in zip(shape, spacing)
    ]
    return np.meshgrid(*mm, indexing="ij", sparse=True)


def phantom_case(
    generator: str,
    seed: int,
    image,
    geometry,
    axes: str,
    modality: str,
    labels,
    structures,
    meta=None,
) -> Case:
    """A phantom's case; its ``meta`` records ``generator`` (a function of
    :mod:`napari_segeval.phantoms`) and ``seed`` before ``meta``."""
    meta = {"generator": f"napari_segeval.phantoms.{generator}", "seed": int(seed), **(meta or {})}
    return Case(image, geometry, axes, modality, labels, dict(structures), meta=meta)
