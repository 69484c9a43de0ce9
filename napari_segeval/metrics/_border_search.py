"""Surfels of two masks on one padded grid, and exact nearest-border distances.

A banded search in order of distance, exact as scipy's EDT, with a k-d tree for the rest
(docs/design.md, "Surface metrics").
"""

from __future__ import annotations

import math

import numpy as np

_CHUNK = 1 << 20  # points x offsets gathered at once
_TREE_BUILD = 40  # k-d tree cost per other-border point, in gathered elements
_TREE_QUERY = 200  # ... and per query point
_SLAB = 1 << 17  # voxels per slab when computing codes
_MAX_PAD = 12  # voxels of padding per side at most


def window(spacing: np.ndarray) -> tuple[int, ...]:
    """Half widths (voxels per axis) of the search window: 4 coarsest voxels, at most 12."""
    radius = 4.0 * float(spacing.max())
    return tuple(min(math.ceil(radius / s - 1e-9), _MAX_PAD) for s in spacing)


def distance(delta: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    """sqrt(sum((delta * spacing)**2)) over the last axis, in the operation order of scipy's EDT."""
    scaled = delta.astype(np.float64) * spacing
    np.multiply(scaled, scaled, scaled)
    total = scaled[:, 0]
    for axis in range(1, scaled.shape[1]):
        total = total + scaled[:, axis]
    return np.sqrt(total)


def padded_codes(mask: np.ndarray, pad: tuple[int, ...]) -> np.ndarray:
    """Neighbourhood codes of ``mask`` (one more element per axis), zero-padded by ``pad``."""
    a = np.zeros(tuple(s + 2 for s in mask.shape), np.uint8)
    a[(slice(1, -1),) * mask.ndim] = mask
    out = np.zeros(tuple(s + 1 + 2 * p for s, p in zip(mask.shape, pad)), np.uint8)
    inner = out[tuple(slice(p, p + s + 1) for s, p in zip(mask.shape, pad))]
    # slabs of planes along the first axis, so the temporaries stay in cache
    step = max(1, _SLAB // max(a[0].size, 1))
    shift = 1 << (mask.ndim - 1)
    for z in range(0, inner.shape[0], step):
        planes = _codes_in_plane(a[z : z + step + 1])
        np.bitwise_or(np.left_shift(planes[:-1], shift), planes[1:], out=inner[z : z + step])
    return out


def _codes_in_plane(a: np.ndarray) -> np.ndarray:
    """Codes of the trailing axes (all but the first) of a padded uint8 slab."""
    shift = 1
    for axis in range(a.ndim - 1, 0, -1):
        head = (slice(None),) * axis  # the trailing axes are whole
        shifted = np.left_shift(a[head + (slice(None, -1),)], shift)
        a = np.bitwise_or(shifted, a[head + (slice(1, None),)], out=shifted)
        shift *= 2
    return a


def border(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Border grid (code neither empty nor full) and the flat indices of its points."""
    full = (1 << (1 << codes.ndim)) - 1
    grid = np.subtract(codes, 1, dtype=np.uint8)
    grid = np.less(grid, full - 1)
    return grid, np.flatnonzero(grid)


def _offsets(spacing: np.ndarray, pad: tuple[int, ...], strides: np.ndarray):
    """Window offsets nearer than ``reach``, nearest first: flat steps, distances, reach."""
    axes = [np.arange(-p, p + 1) for p in pad]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(pad))
    dist = distance(grid, spacing)
    reach = min((p + 1) * float(s) for p, s in zip(pad, spacing))
    keep = dist < reach
    order = np.argsort(dist[keep], kind="stable")
    return grid[keep][order] @ strides, dist[keep][order], reach


def nearest(
    index_a: np.ndarray,
    grid_b: np.ndarray,
    index_b: np.ndarray,
    spacing: np.ndarray,
    pad: tuple[int, ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distance (mm) from every point ``index_a`` to the nearest point of border ``grid_b``.

    Returns distances, ranks and values: per point an integer rank such that
    ``values[rank]`` is its distance and ranks increase with distance (equal distances
    may have different ranks, but all ranks between them hold that distance too).
    """
    n = index_a.size
    strides = np.array(grid_b.strides, np.int64) // grid_b.itemsize
    steps, step_dist, _ = _offsets(spacing, pad, strides)
    dist = np.empty(n)
    rank = np.empty(n, np.int64)
    flat = grid_b.reshape(-1)
    pos = np.arange(n)
    cur = index_a
    k = 0
    spent = 0
    while pos.size and k < steps.size:
        m = pos.size
        if spent > _TREE_BUILD * index_b.size + _TREE_QUERY * m:
            break
        j = 1 if k == 0 else max(1, min(steps.size - k, _CHUNK // m))
        if j == 1:
            hit = flat[cur + steps[k]]
            found = pos[hit]
            dist[found] = step_dist[k]
            rank[found] = k
        else:
            block = flat[cur[:, None] + steps[None, k : k + j]]
            hit = block.any(axis=1)
            first = k + block.argmax(axis=1)[hit]
            found = pos[hit]
            dist[found] = step_dist[first]
            rank[found] = first
        miss = ~hit
        pos = pos[miss]
        cur = cur[miss]
        spent += m * j
        k += j
    values = step_dist[:k]
    if pos.size:
        # these points missed offsets 0 .. k-1, so they are no nearer than step_dist[k - 1]
        rest = _tree(cur, index_b, grid_b.shape, spacing)
        dist[pos] = rest
        order = np.argsort(rest, kind="stable")
        rank[pos[order]] = k + np.arange(pos.size)
        values = np.concatenate([values, rest[order]])
    return dist, rank, values


def _tree(query: np.ndarray, index_b: np.ndarray, shape: tuple[int, ...], spacing: np.ndarray):
    """Exact distances from flat indices ``query`` to the points ``index_b`` by a k-d tree."""
    from scipy.spatial import cKDTree

    pts_b = np.stack(np.unravel_index(index_b, shape), -1)
    pts_q = np.stack(np.unravel_index(query, shape), -1)
    tree = cKDTree(pts_b * spacing, balanced_tree=False, compact_nodes=False)
    _, near = tree.query(pts_q * spacing, workers=-1)
    return distance(pts_b[near] - pts_q, spacing)
