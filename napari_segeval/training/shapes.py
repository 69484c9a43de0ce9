"""Random 3D objects in cluttered scenes, what the built-in promptable model learns to segment
(families described in docs/model_cards.md; :data:`HELDOUT_SHAPES` never seen in training),
deterministic given a :class:`numpy.random.Generator`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from napari_segeval.propagation.masks import largest_component

TRAIN_SHAPES = ("ellipsoid", "blob", "deformed", "holed", "concave", "thin")
HELDOUT_SHAPES = ("star", "superellipse")
#: Objects smaller than this many voxels are dropped from a scene.
MIN_VOXELS = 24


@dataclass
class Scene:
    """Objects (``labels``, 0 = background) of a generated stack, and every voxel's render
    class (tissue or an object's inner class) of ``n_classes`` for :func:`.appearance.render`."""

    labels: np.ndarray
    classes: np.ndarray
    n_classes: int
    families: tuple[str, ...]


def _params(rng: np.random.Generator, shape: Sequence[int], radius: float | None) -> dict:
    """Size, position and the slice-to-slice motion of one object."""
    nz, h, w = shape
    r = float(
        radius if radius is not None else np.exp(rng.uniform(np.log(4.0), np.log(0.3 * min(h, w))))
    )
    hz = float(rng.uniform(1.5, max(2.0, 0.45 * nz)))
    return {
        "r": r,
        "aspect": float(rng.uniform(0.45, 1.0)),
        "hz": hz,
        "cz": float(rng.uniform(hz * 0.6, nz - 1 - hz * 0.6)) if nz > 1 else 0.0,
        "cy": float(rng.uniform(0.6 * r, h - 0.6 * r)),
        "cx": float(rng.uniform(0.6 * r, w - 0.6 * r)),
        "drift": rng.uniform(-0.5, 0.5, size=4) * r,
        "grow": float(rng.uniform(-0.3, 0.3)),
        "angle": float(rng.uniform(0, np.pi)),
        "twist": float(rng.uniform(-0.6, 0.6)),
        "power": float(rng.uniform(1.5, 6.0)),
    }


def _frame(p: dict, z: np.ndarray, y: np.ndarray, x: np.ndarray, nz: int):
    """Per-slice scale, rotated coordinates ``(u, v)`` in object radii, and ``t`` in [-1, 1]."""
    t = np.clip((z - p["cz"]) / p["hz"], -1.5, 1.5) if nz > 1 else z * 0
    prof = np.clip(1 - np.abs(t) ** p["power"], 0, 1) ** (1 / p["power"])
    scale = np.maximum(prof * (1 + p["grow"] * t), 1e-3) * p["r"]
    d = p["drift"]
    cy = p["cy"] + d[0] * t + d[1] * t * t
    cx = p["cx"] + d[2] * t + d[3] * t * t
    ang = p["angle"] + p["twist"] * t
    ca, sa = np.cos(ang), np.sin(ang)
    dy, dx = y - cy, x - cx
    u = (ca * dy - sa * dx) / scale
    v = (sa * dy + ca * dx) / (scale * p["aspect"])
    return u, v, t


def _field(rng: np.random.Generator, shape: Sequence[int], coarse_xy: int) -> np.ndarray:
    """A smooth random field (unit-ish std): coarse normal grid, linear in z, bicubic in-plane."""
    import torch
    import torch.nn.functional as F

    nz, h, w = (int(s) for s in shape)
    cz = 3 if nz > 2 else 2
    c = max(2, int(coarse_xy))
    grid = torch.from_numpy(rng.standard_normal((1, 1, cz, c, c)).astype(np.float32))
    grid = F.interpolate(grid, size=(nz, c, c), mode="trilinear", align_corners=False)
    out = F.interpolate(grid[0].transpose(0, 1), size=(h, w), mode="bicubic", align_corners=False)
    return out[:, 0].numpy()


def _level(family: str, rng: np.random.Generator, p: dict, grids, shape) -> np.ndarray:
    """Implicit level of ``family`` on the sub-grid: below 1 inside the object."""
    z, y, x = grids
    sub = (z.size, y.size, x.size)
    nz = shape[0]
    if family == "deformed":
        amp = rng.uniform(0.3, 0.8) * p["r"]
        y = y + amp * _field(rng, sub, 3)
        x = x + amp * _field(rng, sub, 3)
    u, v, t = _frame(p, z, y, x, nz)
    outside = np.abs(t) >= 1
    if family == "star":
        arms, depth = int(rng.integers(4, 9)), rng.uniform(0.25, 0.5)
        theta = np.arctan2(v, u) + 2.0 * p["twist"] * t
        rad = np.sqrt(u * u + v * v) / (1 + depth * np.cos(arms * theta))
        level = rad**2
    elif family == "superellipse":
        n = rng.uniform(4.0, 10.0)
        level = np.abs(u) ** n + np.abs(v) ** n
    else:
        level = u * u + v * v
    if family == "blob":
        level = level + rng.uniform(0.3, 0.9) * _field(rng, sub, int(rng.integers(3, 7)))
    elif family in ("deformed", "holed", "concave"):
        level = level + 0.15 * _field(rng, sub, 4)
    return np.where(outside, 2.0, level)


def _holes(rng, family: str, p: dict, grids, shape, level: np.ndarray) -> np.ndarray:
    """Boolean mask of what a ``holed``/``concave`` object loses (holes, bites, the cavity)."""
    cut = np.zeros(level.shape, bool)
    if family == "holed" and rng.random() < 0.35:  # a wall around a cavity
        return level < (1 - rng.uniform(0.15, 0.45)) ** 2
    z, y, x = grids
    u, v, _ = _frame(p, z, y, x, shape[0])
    n = int(rng.integers(1, 4))
    for _ in range(n):
        if family == "holed":
            c, rr = rng.uniform(-0.45, 0.45, 2), rng.uniform(0.15, 0.4, 2)
        else:
            ang = rng.uniform(0, 2 * np.pi)
            c = rng.uniform(0.75, 1.1) * np.array([np.cos(ang), np.sin(ang)])
            rr = rng.uniform(0.3, 0.65, 2)
        cut |= ((u - c[0]) / rr[0]) ** 2 + ((v - c[1]) / rr[1]) ** 2 < 1
    return cut


def _thin(rng: np.random.Generator, p: dict, grids, shape) -> np.ndarray:
    """A random smooth curve 1-4 px thick, drifting between slices."""
    z, y, x = grids
    h, w = y.size, x.size
    length = p["r"] * rng.uniform(2.0, 4.0)
    ctrl = int(rng.integers(3, 7))
    s = np.linspace(-0.5, 0.5, ctrl) * length
    lateral = rng.uniform(-0.35, 0.35, ctrl) * length
    ts = np.linspace(0, ctrl - 1, 400)
    cs = np.interp(ts, np.arange(ctrl), s)
    cl = ndimage.gaussian_filter1d(np.interp(ts, np.arange(ctrl), lateral), 25, mode="nearest")
    ca, sa = np.cos(p["angle"]), np.sin(p["angle"])
    py = p["cy"] - float(y.min()) + ca * cs - sa * cl
    px = p["cx"] - float(x.min()) + sa * cs + ca * cl
    line = np.ones((h, w), bool)
    iy, ix = np.rint(py).astype(int), np.rint(px).astype(int)
    keep = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
    line[iy[keep], ix[keep]] = False
    dist = ndimage.distance_transform_edt(line).astype(np.float32)
    width = rng.uniform(1.0, 3.5)
    out = np.zeros((z.size, h, w), bool)
    for k, zz in enumerate(z.ravel()):
        t = (zz - p["cz"]) / p["hz"] if shape[0] > 1 else 0.0
        if abs(t) >= 1:
            continue
        shift = (p["drift"][0] * t * 0.3, p["drift"][2] * t * 0.3)
        d = ndimage.shift(dist, shift, order=1, mode="nearest")
        out[k] = d < width * (1 - abs(t) ** p["power"]) ** (1 / p["power"]) + 0.5
    return out


def draw_object(
    rng: np.random.Generator, family: str, shape: Sequence[int], radius: float | None = None
) -> np.ndarray:
    """Boolean mask ``shape`` of one random object of ``family`` (may be empty)."""
    if family not in TRAIN_SHAPES + HELDOUT_SHAPES:
        raise ValueError(f"unknown shape family {family!r}")
    shape = tuple(int(s) for s in shape)
    p = _params(rng, shape, radius)
    reach = p["r"] * (1.6 + abs(p["grow"])) * (1.4 if family in ("thin", "deformed") else 1.0)
    reach += float(np.abs(p["drift"]).sum()) + 2
    # the sub-grid the object can reach: (centre, half-extent, margin) per axis
    extent = ((p["cz"], p["hz"], 1), (p["cy"], reach, 0), (p["cx"], reach, 0))
    lo = [max(0, int(c - r) - m) for c, r, m in extent]
    hi = [min(n, int(c + r) + m + 1) for n, (c, r, m) in zip(shape, extent)]
    out = np.zeros(shape, bool)
    if min(b - a for a, b in zip(lo, hi)) < 1:
        return out
    grids = tuple(g.astype(np.float32) for g in np.ogrid[tuple(map(slice, lo, hi))])
    if family == "thin":
        inside = _thin(rng, p, grids, shape)
    else:
        level = _level(family, rng, p, grids, shape)
        inside = level < 1
        if family in ("holed", "concave"):
            inside &= ~_holes(rng, family, p, grids, shape, level)
    out[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]] = inside
    return largest_component(out)


def _tissue(rng: np.random.Generator, shape: Sequence[int]) -> tuple[np.ndarray, int]:
    """Background classes: a quantised smooth field, sometimes inside a body outline."""
    n = int(rng.integers(2, 7))
    field = _field(rng, shape, int(rng.integers(3, 10)))
    cuts = np.sort(rng.uniform(-1.2, 1.2, n - 1))
    tissue = np.searchsorted(cuts, field).astype(np.uint8)
    if rng.random() < 0.5:  # a body: class n outside an ellipse-like outline
        _, h, w = shape
        yy, xx = np.ogrid[0:h, 0:w]
        ry, rx = rng.uniform(0.35, 0.5) * h, rng.uniform(0.35, 0.5) * w
        wobble = 0.05 * _field(rng, (1, h, w), 4)[0]
        out = ((yy - h / 2) / ry) ** 2 + ((xx - w / 2) / rx) ** 2 + wobble > 1
        tissue[:, out] = n
        n += 1
    return tissue, n


def _inner_classes(rng, mask: np.ndarray, first: int) -> tuple[np.ndarray, int]:
    """Classes inside one object: one class, or a core/rim or field-quantised parts."""
    cls = np.full(mask.shape, first, np.uint16)
    r = rng.random()
    if r < 0.55:
        return cls, 1
    if r < 0.8:  # rim and core
        width = int(rng.integers(1, 4))
        box = tuple(slice(max(a.min() - 1, 0), a.max() + 2) for a in np.nonzero(mask))
        core = ndimage.binary_erosion(mask[box], np.ones((1, 3, 3), bool), iterations=width)
        cls[box][core] = first + 1
        return cls, 2
    parts = int(rng.integers(2, 4))
    cuts = np.sort(rng.uniform(-0.8, 0.8, parts - 1))
    box = tuple(slice(a.min(), a.max() + 1) for a in np.nonzero(mask))
    sub = mask[box]
    cls[box] = first + np.searchsorted(cuts, _field(rng, sub.shape, int(rng.integers(3, 7))))
    return cls, parts


def make_scene(
    rng: np.random.Generator,
    shape: Sequence[int] = (24, 128, 128),
    families: Sequence[str] = TRAIN_SHAPES,
    n_objects: tuple[int, int] = (2, 5),
    nested: float = 0.2,
) -> Scene:
    """A ``(z, y, x)`` stack (``z == 1``: 2D) of random objects of ``families`` on random tissue.

    ``n_objects`` is the inclusive range of objects drawn (some are dropped when covered
    by later ones); ``nested`` the probability that one is drawn inside an earlier one.
    """
    shape = tuple(int(s) for s in shape)
    tissue, n_cls = _tissue(rng, shape)
    labels = np.zeros(shape, np.uint8)
    classes = tissue.astype(np.uint16)
    fams: list[str] = []
    for _ in range(int(rng.integers(n_objects[0], n_objects[1] + 1))):
        family = str(rng.choice(list(families)))
        obj = draw_object(rng, family, shape)
        if labels.any() and rng.random() < nested:  # inside an earlier object
            host = int(rng.integers(1, labels.max() + 1))
            obj = _nest(rng, family, shape, labels == host)
        if obj.sum() < MIN_VOXELS:
            continue
        inner, parts = _inner_classes(rng, obj, n_cls)
        labels[obj] = len(fams) + 1
        classes[obj] = inner[obj]
        n_cls += parts
        fams.append(family)
    labels, fams = _drop_covered(labels, fams)
    return Scene(labels, classes, n_cls, tuple(fams))


def _nest(rng, family: str, shape, host: np.ndarray) -> np.ndarray:
    """An object drawn around a voxel inside ``host``, clipped to it."""
    idx = np.flatnonzero(ndimage.binary_erosion(host, iterations=1))
    if idx.size == 0:
        return np.zeros(shape, bool)
    zz, yy, xx = np.unravel_index(idx[int(rng.integers(idx.size))], shape)
    extent = np.nonzero(host[zz])
    radius = 0.25 * max(np.ptp(extent[0]) + 1, np.ptp(extent[1]) + 1)
    obj = draw_object(rng, family, shape, radius=max(radius, 2.0))
    if not obj.any():
        return obj
    shift = [int(at) - int(np.mean(a)) for at, a in zip((zz, yy, xx), np.nonzero(obj))]
    return largest_component(np.roll(obj, shift, axis=(0, 1, 2)) & host)


def _drop_covered(labels: np.ndarray, fams: list[str]) -> tuple[np.ndarray, list[str]]:
    """Relabel ``1..K`` keeping objects that still have :data:`MIN_VOXELS` voxels."""
    counts = np.bincount(labels.ravel(), minlength=len(fams) + 1)
    keep = [k for k in range(1, len(fams) + 1) if counts[k] >= MIN_VOXELS]
    lut = np.zeros(len(fams) + 1, np.uint8)
    lut[keep] = np.arange(1, len(keep) + 1)
    return lut[labels], [fams[k - 1] for k in keep]
