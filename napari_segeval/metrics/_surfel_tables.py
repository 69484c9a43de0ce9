"""Surface-element (surfel) area tables for 2x2x2 and 2x2 neighbourhoods.

A *neighbourhood code* describes which of the 8 voxels around a grid corner
(the 2x2x2 block whose centre is half a voxel before voxel ``p`` on every axis)
are inside the mask. Bit ``4*(1-o0) + 2*(1-o1) + (1-o2)`` holds the voxel at offset
``(o0, o1, o2)`` in ``{0, 1}^3`` (offset 0 is the voxel ``p - 1``), the same
encoding as DeepMind's ``surface-distance`` package, so codes can be compared.

The surfel of a code is the marching-cubes surface inside that block: for every
group of inside corners that are connected along block edges, the boundary of
the convex hull of those corners and of the midpoints of their edges to outside
corners, without the parts that lie on the block's faces. Blocks with more than
four inside corners use the surface of the outside corners (marching cubes is
symmetric under complement); with exactly four, the groups of the inside corners
are used. Each planar facet contributes its area; anisotropic spacing scales a
facet's area vector ``(n0, n1, n2)`` to ``(n0*s1*s2, n1*s0*s2, n2*s0*s1)``.

The tables are derived here from that definition (with :mod:`scipy.spatial`) and
checked against DeepMind's published table in the tests.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np


def _corner(bit: int) -> tuple[int, int, int]:
    """Offsets (o0, o1, o2) of the voxel that ``bit`` encodes."""
    return (1 - ((bit >> 2) & 1), 1 - ((bit >> 1) & 1), 1 - (bit & 1))


def _groups(corners: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Connected groups of block corners (adjacent along one block edge)."""
    left = set(corners)
    groups = []
    while left:
        stack = [left.pop()]
        group = []
        while stack:
            c = stack.pop()
            group.append(c)
            for axis in range(3):
                nb = list(c)
                nb[axis] = 1 - nb[axis]
                nb = tuple(nb)
                if nb in left:
                    left.remove(nb)
                    stack.append(nb)
        groups.append(group)
    return groups


def _facet_vectors(group: list[tuple[int, int, int]]) -> list[np.ndarray]:
    """Area vectors (index units) of the interior facets of one corner group."""
    from scipy.spatial import ConvexHull

    inside = set(group)
    points = [np.array(c, float) for c in group]
    for c in group:
        for axis in range(3):
            nb = list(c)
            nb[axis] = 1 - nb[axis]
            if tuple(nb) not in inside:
                points.append((np.array(c, float) + np.array(nb, float)) / 2)
    pts = np.array(points)
    mids = pts[len(group):]
    if len(group) == 4 and _coplanar(np.array(group, float)):
        # four corners on one face: the surfel is the flat square half way
        axis = int(np.flatnonzero(np.ptp(np.array(group), axis=0) == 0)[0])
        vec = np.zeros(3)
        vec[axis] = 1.0
        return [vec]
    if len(mids) == 6 and not _coplanar(mids):
        return _twisted_hexagon(mids)
    hull = ConvexHull(pts)
    # merge coplanar triangles: group simplices by their (rounded) plane
    planes: dict[tuple, np.ndarray] = {}
    for simplex, eq in zip(hull.simplices, hull.equations):
        tri = pts[simplex]
        if any(np.all(np.isclose(tri[:, a], v)) for a in range(3) for v in (0.0, 1.0)):
            continue  # lies on a face of the block
        vec = np.cross(tri[1] - tri[0], tri[2] - tri[0]) / 2
        key = tuple(np.round(eq, 9))
        planes[key] = planes.get(key, np.zeros(3)) + np.abs(eq[:3]) * np.linalg.norm(vec)
    return list(planes.values())


def _twisted_hexagon(mids: np.ndarray) -> list[np.ndarray]:
    """Facets of the non-planar hexagon of a four-corner zig-zag group.

    Marching cubes splits it into the flat quadrilateral of the four midpoints
    that lie on a plane through the block centre, and one triangle ("ear") for
    each of the two other midpoints with its two neighbours on the loop (the
    quadrilateral midpoints that share a block face with it).
    """
    centre = np.full(3, 0.5)
    for quad in itertools.combinations(range(6), 4):
        if _coplanar(np.vstack([mids[list(quad)], centre])):
            break
    else:  # pragma: no cover - every twisted hexagon has such a plane
        raise AssertionError("no central plane")
    quad_pts = mids[list(quad)]
    # order the quadrilateral around its centroid to get its area vector
    normal = np.cross(quad_pts[1] - quad_pts[0], quad_pts[2] - quad_pts[0])
    facets = [_polygon_vector(quad_pts, normal)]
    for ear in sorted(set(range(6)) - set(quad)):
        p = mids[ear]
        on_face = [q for q in quad_pts if any(p[a] == q[a] and p[a] in (0.0, 1.0) for a in range(3))]
        if len(on_face) != 2:  # pragma: no cover - loop neighbours are unique
            raise AssertionError("ear without two neighbours")
        facets.append(np.abs(np.cross(on_face[0] - p, on_face[1] - p)) / 2)
    return facets


def _polygon_vector(pts: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Area vector (absolute components) of a planar convex polygon."""
    n = normal / np.linalg.norm(normal)
    centroid = pts.mean(axis=0)
    u = pts[0] - centroid
    v = np.cross(n, u)
    order = np.argsort(np.arctan2((pts - centroid) @ v, (pts - centroid) @ u))
    ring = pts[order]
    area = 0.0
    for i in range(len(ring)):
        area += np.dot(np.cross(ring[i] - centroid, ring[(i + 1) % len(ring)] - centroid), n) / 2
    return np.abs(n) * abs(area)


def _coplanar(pts: np.ndarray) -> bool:
    centred = pts - pts.mean(axis=0)
    return np.linalg.matrix_rank(centred, tol=1e-9) < 3


@functools.lru_cache(maxsize=1)
def _facets_3d() -> tuple[tuple[np.ndarray, ...], ...]:
    """Area vectors of every facet of every 3D code (index units)."""
    table = []
    for code in range(256):
        bits = [b for b in range(8) if code >> b & 1]
        if len(bits) > 4:
            bits = [b for b in range(8) if not code >> b & 1]
        if not bits or len(bits) == 8:
            table.append(())
            continue
        vectors: list[np.ndarray] = []
        for group in _groups([_corner(b) for b in bits]):
            vectors.extend(_facet_vectors(group))
        table.append(tuple(vectors))
    return tuple(table)


def surfel_area_table_3d(spacing: tuple[float, float, float]) -> np.ndarray:
    """Surfel area in mm^2 for each of the 256 codes of a 2x2x2 neighbourhood.

    Parameters
    ----------
    spacing : tuple of 3 floats
        Voxel spacing in mm along the array axes (z, y, x).

    Returns
    -------
    numpy.ndarray
        float64 array of shape (256,); codes 0 and 255 have area 0.

    Examples
    --------
    >>> t = surfel_area_table_3d((1.0, 1.0, 1.0))
    >>> float(t[0]), float(t[255]), round(float(t[0b00001111]), 6)
    (0.0, 0.0, 1.0)
    """
    s0, s1, s2 = (float(s) for s in spacing)
    scale = np.array([s1 * s2, s0 * s2, s0 * s1])
    out = np.zeros(256)
    for code, vectors in enumerate(_facets_3d()):
        out[code] = sum(float(np.linalg.norm(v * scale)) for v in vectors)
    return out


def contour_length_table_2d(spacing: tuple[float, float]) -> np.ndarray:
    """Contour length in mm for each of the 16 codes of a 2x2 neighbourhood.

    Bit ``2*(1-o0) + (1-o1)`` holds the pixel at offset ``(o0, o1)``. The contour
    of a code is the marching-squares segment(s): between edge midpoints around
    each inside pixel group; the two diagonal codes give two corner segments.

    Parameters
    ----------
    spacing : tuple of 2 floats
        Pixel spacing in mm along (y, x).

    Returns
    -------
    numpy.ndarray
        float64 array of shape (16,).

    Examples
    --------
    >>> t = contour_length_table_2d((1.0, 2.0))
    >>> float(t[0b0011]), float(t[0b0101])
    (2.0, 1.0)
    """
    s0, s1 = (float(s) for s in spacing)
    diag = 0.5 * float(np.hypot(s0, s1))
    out = np.zeros(16)
    for code in range(1, 15):
        inside = [((1 - (b >> 1 & 1)), 1 - (b & 1)) for b in range(4) if code >> b & 1]
        if len(inside) == 2:
            (a0, a1), (b0, b1) = inside
            if a0 == b0:  # same row: horizontal segment across the block
                out[code] = s1
            elif a1 == b1:
                out[code] = s0
            else:  # opposite corners: two corner cuts
                out[code] = 2 * diag
        else:  # one inside or one outside pixel: one corner cut
            out[code] = diag
    return out


__all__ = ["contour_length_table_2d", "surfel_area_table_3d"]
