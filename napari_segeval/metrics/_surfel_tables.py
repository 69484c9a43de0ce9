"""Surfel area tables of the 2x2x2 (and 2x2) neighbourhood codes, in mm^2 (mm).

Bit ``4*(1-o0) + 2*(1-o1) + (1-o2)`` holds the voxel at offset ``o`` (DeepMind's
``surface-distance`` encoding); the facets of each code: docs/design.md, "Surface metrics".
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

_CORNER = (0.125, 0.125, 0.125)
_TRAPEZOID = (0.375, 0.375, 0.375)
_HEXAGON = (0.75, 0.75, 0.75)
_CENTRE_QUAD = (0.5, 0.5, 0.5)


def _axis(bit_a: int, bit_b: int) -> int:
    """Axis along which neighbouring corners ``bit_a`` and ``bit_b`` differ."""
    return {4: 0, 2: 1, 1: 2}[bit_a ^ bit_b]


def _on(axes: tuple[int, ...], value: float) -> tuple[float, float, float]:
    """Vector with ``value`` on ``axes`` and 0 elsewhere."""
    return tuple(value if a in axes else 0.0 for a in range(3))  # type: ignore[return-value]


def _groups(bits: list[int]) -> list[list[int]]:
    """Connected groups of block corners (adjacent along one block edge)."""
    left = set(bits)
    groups = []
    while left:
        stack = [left.pop()]
        group = []
        while stack:
            b = stack.pop()
            group.append(b)
            for step in (4, 2, 1):
                if b ^ step in left:
                    left.remove(b ^ step)
                    stack.append(b ^ step)
        groups.append(group)
    return groups


def _group_facets(group: list[int]) -> list[tuple[float, float, float]]:
    """Area vectors (voxel units, absolute components) of one connected corner group."""
    n = len(group)
    if n == 1:
        return [_CORNER]
    if n == 2:
        a = _axis(*group)
        return [_on(tuple(x for x in range(3) if x != a), 0.5)]
    # axes along which every corner of the group has the same offset
    fixed = [a for a in range(3) if len({b & (4 >> a) for b in group}) == 1]
    if n == 3:  # an L inside the face normal to fixed[0]
        return [_on((fixed[0],), 0.5), _TRAPEZOID]
    if fixed:  # four corners of one face
        return [_on((fixed[0],), 1.0)]
    members = set(group)
    degree = {b: sum(b ^ s in members for s in (4, 2, 1)) for b in group}
    if max(degree.values()) == 3:  # a corner with its three neighbours
        return [_HEXAGON]
    # a path through all three axes: walk it from one end, noting the step axes
    prev, cur = None, next(b for b in group if degree[b] == 1)
    steps = []
    for _ in range(3):
        nxt = next(cur ^ s for s in (4, 2, 1) if cur ^ s in members and cur ^ s != prev)
        steps.append(_axis(cur, nxt))
        prev, cur = cur, nxt
    a1, a2, a3 = steps
    return [_CENTRE_QUAD, _on((a1, a2), 0.25), _on((a2, a3), 0.25)]


@functools.lru_cache(maxsize=1)
def _facets_3d() -> tuple[np.ndarray, np.ndarray]:
    """Every facet of every 3D code: (code of each facet, area vectors (F, 3))."""
    codes: list[int] = []
    vectors: list[tuple[float, float, float]] = []
    for code in range(1, 255):
        bits = [b for b in range(8) if code >> b & 1]
        if len(bits) > 4:
            bits = [b for b in range(8) if not code >> b & 1]
        for group in _groups(bits):
            facets = _group_facets(group)
            codes.extend([code] * len(facets))
            vectors.extend(facets)
    code_arr, vec_arr = np.array(codes, np.intp), np.array(vectors, np.float64)
    code_arr.flags.writeable = vec_arr.flags.writeable = False
    return code_arr, vec_arr


def surfel_area_table_3d(spacing: Sequence[float] | np.ndarray) -> np.ndarray:
    """Surfel area in mm^2 (float64, (256,)) of each code; codes 0 and 255 have area 0."""
    s0, s1, s2 = (float(s) for s in spacing)
    codes, vectors = _facets_3d()
    scaled = vectors * np.array([s1 * s2, s0 * s2, s0 * s1])
    areas = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    return np.bincount(codes, weights=areas, minlength=256)


def contour_length_table_2d(spacing: Sequence[float] | np.ndarray) -> np.ndarray:
    """Marching-squares contour length in mm (float64, (16,)) of each 2x2 code.

    Bit ``2*(1-o0) + (1-o1)`` holds the pixel at offset ``(o0, o1)``; the two diagonal
    codes have two corner segments.
    """
    s0, s1 = (float(s) for s in spacing)
    diag = 0.5 * float(np.hypot(s0, s1))
    out = np.full(16, diag)  # one pixel in or one out: one corner cut
    out[[0, 15]] = 0.0
    out[[3, 12]] = s1  # a row of the block inside: a segment across it
    out[[5, 10]] = s0  # a column
    out[[6, 9]] = 2 * diag  # opposite corners: two corner cuts
    return out
