"""2D colour phantoms on a unit grid: endoscopy with polyps (NeoPolyp-like) and
dermoscopy (ISIC-like).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy import ndimage

from napari_segeval.io.case import Case, Geometry
from napari_segeval.phantoms._fields import ellipsoid_level, phantom_case, smooth_field

#: Polyp classes as in NeoPolyp.
POLYP_STRUCTURES: dict[int, str] = {1: "neoplastic", 2: "non_neoplastic"}

#: NeoPolyp colour coding of the polyp masks (RGB).
POLYP_COLORS: dict[int, tuple[int, int, int]] = {1: (255, 0, 0), 2: (0, 255, 0)}

#: The single class of the dermoscopy phantom (ISIC 2018 task 1).
SKIN_STRUCTURES: dict[int, str] = {1: "lesion"}


def _check_shape(shape: Sequence[int]) -> tuple[int, int]:
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2 or min(shape) < 32:
        raise ValueError(f"2D phantom shape must be (y, x) of at least 32 pixels, got {shape}")
    return shape


def _rgb_case(generator: str, seed: int, rgb, labels, modality: str, structures) -> Case:
    """A colour phantom's case: ``rgb`` as ``uint8`` on a unit grid (axes ``"yxc"``)."""
    image = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    return phantom_case(
        generator, seed, image, Geometry.identity(2), "yxc", modality, labels, structures
    )


def _blob(rng, shape, centre, radii, wobble: float) -> np.ndarray:
    """Irregular blob: rotated ellipse deformed by a smooth field."""
    yy, xx = np.ogrid[0 : shape[0], 0 : shape[1]]
    level = ellipsoid_level((yy, xx), centre, radii, angle=rng.uniform(0, np.pi))
    return level + wobble * smooth_field(rng, shape, (6, 7))


def make_polyp_image(seed: int, shape: Sequence[int] = (128, 160)) -> Case:
    """Synthetic colonoscopy frame (``"yxc"`` uint8, endoscopy) with one or two polyps
    labelled with :data:`POLYP_STRUCTURES`: mucosa with vessels, a dark lumen,
    vignetting, a black endoscope border and specular highlights."""
    h, w = _check_shape(shape)
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.array([rng.uniform(175, 205), rng.uniform(80, 110), rng.uniform(70, 95)])
    tone = smooth_field(rng, (h, w), (4, 5))[..., None] * np.array([14, 10, 8])
    rgb = base + tone + 6 * smooth_field(rng, (h, w), (32, 40))[..., None]
    vessels = np.abs(smooth_field(rng, (h, w), (9, 11))) < 0.05
    rgb[vessels] *= np.array([0.8, 0.55, 0.6])
    ly, lx = rng.uniform(0.2, 0.8) * h, rng.uniform(0.2, 0.8) * w
    lumen = np.exp(-(((yy - ly) / (0.22 * h)) ** 2 + ((xx - lx) / (0.22 * w)) ** 2))
    rgb *= (1 - 0.8 * lumen)[..., None]

    labels = np.zeros((h, w), np.uint8)
    n_polyps = 1 + int(rng.random() < 0.4)
    side = rng.random() < 0.5
    for i in range(n_polyps):
        cls = 1 if rng.random() < 0.6 else 2
        x_range = (0.25, 0.75) if n_polyps == 1 else ((0.2, 0.4), (0.6, 0.8))[int(side) ^ i]
        centre = (rng.uniform(0.3, 0.7) * h, rng.uniform(*x_range) * w)
        r = rng.uniform(0.09, 0.2) * min(h, w)
        level = _blob(rng, (h, w), centre, (r, r * rng.uniform(0.8, 1.3)), 0.25)
        mask = (level < 1) & (labels == 0)
        dome = np.sqrt(np.clip(1 - level, 0, 1))
        colour = np.array([215, 95, 80]) if cls == 1 else np.array([225, 170, 150])
        surface = colour * (0.75 + 0.35 * dome[..., None])
        surface += 10 * smooth_field(rng, (h, w), (20, 25))[..., None]
        rgb = np.where(mask[..., None], surface, rgb)
        labels[mask] = cls
    rgb = ndimage.gaussian_filter(rgb, (0.8, 0.8, 0))
    highlight = ndimage.gaussian_filter(
        (smooth_field(rng, (h, w), (24, 30)) > 2.0).astype(np.float32), 0.7
    )
    rgb = rgb * (1 - highlight[..., None]) + 250 * highlight[..., None]
    r_norm = np.hypot((yy - h / 2) / (h / 2), (xx - w / 2) / (w / 2))
    rgb *= np.clip(1 - 0.45 * r_norm**2, 0, 1)[..., None]
    border = r_norm > rng.uniform(1.18, 1.3)
    rgb[border] = 0
    labels[border] = 0
    rgb += rng.normal(0, 2.0, rgb.shape)
    return _rgb_case("make_polyp_image", seed, rgb, labels, "endoscopy", POLYP_STRUCTURES)


def _hairs(rng, yy, xx, n: int) -> np.ndarray:
    """Thin dark curved lines (hairs) as a soft 0-1 map."""
    hair = np.zeros(yy.shape, np.float32)
    h, w = yy.shape
    for _ in range(n):
        p0 = np.array([rng.uniform(0, h), rng.uniform(0, w)])
        ang = rng.uniform(0, np.pi)
        d = np.array([np.sin(ang), np.cos(ang)])
        bend = rng.uniform(-0.004, 0.004)
        t = (yy - p0[0]) * d[0] + (xx - p0[1]) * d[1]
        s = -(yy - p0[0]) * d[1] + (xx - p0[1]) * d[0] - bend * t**2
        length = rng.uniform(0.3, 0.7) * max(h, w)
        hair = np.maximum(hair, np.exp(-((s / 0.6) ** 2)) * (np.abs(t) < length / 2))
    return hair


def make_skin_image(seed: int, shape: Sequence[int] = (128, 160)) -> Case:
    """Synthetic dermoscopy image (``"yxc"`` uint8) with one pigmented lesion (label 1),
    hairs and dark dermoscope corners (ISIC 2018-like)."""
    h, w = _check_shape(shape)
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.array([rng.uniform(200, 230), rng.uniform(150, 180), rng.uniform(125, 155)])
    rgb = base + smooth_field(rng, (h, w), (5, 6))[..., None] * np.array([8, 8, 8])
    rgb += 5 * smooth_field(rng, (h, w), (40, 50))[..., None]

    centre = (rng.uniform(0.4, 0.6) * h, rng.uniform(0.4, 0.6) * w)
    r = rng.uniform(0.2, 0.3) * min(h, w)
    level = _blob(rng, (h, w), centre, (r, r * rng.uniform(0.9, 1.4)), 0.35)
    mask = level < 1
    depth = np.clip(1 - level, 0, 1)[..., None]
    brown = np.array([rng.uniform(110, 150), rng.uniform(65, 90), rng.uniform(40, 60)])
    lesion = brown * (1 - 0.4 * depth)
    network = (np.abs(smooth_field(rng, (h, w), (22, 28))) < 0.15)[..., None]
    lesion = np.where(network, lesion * 0.7, lesion)
    rgb = np.where(mask[..., None], lesion, rgb)
    rgb = ndimage.gaussian_filter(rgb, (1.0, 1.0, 0))

    hair = _hairs(rng, yy, xx, int(rng.integers(0, 5)))[..., None]
    rgb = rgb * (1 - 0.8 * hair) + 40 * 0.8 * hair
    r_norm = np.hypot((yy - h / 2) / (h / 2), (xx - w / 2) / (w / 2))
    rgb *= np.clip(1.25 - 0.5 * r_norm**2, 0, 1)[..., None]
    rgb += rng.normal(0, 2.0, rgb.shape)
    labels = mask.astype(np.uint8)
    return _rgb_case("make_skin_image", seed, rgb, labels, "dermoscopy", SKIN_STRUCTURES)


def labels_to_rgb_mask(
    labels: np.ndarray, table: Mapping[int, Sequence[int]] | None = None
) -> np.ndarray:
    """``(y, x, 3)`` uint8 colour coding of a label map by ``table`` (default
    :data:`POLYP_COLORS`; background black); ValueError for an id without a colour."""
    table = POLYP_COLORS if table is None else table
    labels = np.asarray(labels)
    missing = sorted(set(np.unique(labels).tolist()) - {0} - {int(k) for k in table})
    if missing:
        raise ValueError(f"label ids {missing} have no colour in the table {dict(table)}")
    out = np.zeros(labels.shape + (3,), np.uint8)
    for lab, colour in table.items():
        out[labels == int(lab)] = np.asarray(colour, dtype=np.uint8)
    return out
