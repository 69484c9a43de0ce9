"""Cardiac ultrasound phantom clip (CAMUS-like apical view): a beating left ventricle (apex
at the top, left atrium below the mitral plane, an unlabelled right heart as a distractor)
under correlated speckle, log-compressed to 8 bits, 1.4 mm pixels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import ndimage

from napari_segeval.io.case import Case, Geometry
from napari_segeval.phantoms._fields import ellipsoid_level, phantom_case, smooth_field

#: Label ids and names of the echo phantom (as in CAMUS).
ECHO_STRUCTURES: dict[int, str] = {1: "lv_cavity", 2: "myocardium", 3: "left_atrium"}

#: Pixel spacing in mm of the echo phantom (``y``, ``x``); time axis spacing is 1.
ECHO_PIXEL_MM = 1.4

#: Nominal frame rate stored in ``Case.meta["fps"]`` and used for the sample video.
ECHO_FPS = 25


def _sector(shape: tuple[int, int], half_angle: float) -> tuple[np.ndarray, np.ndarray]:
    """Field-of-view mask and depth (0 at the apex, 1 at the far edge) of the sector."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    dy, dx = yy + 2.0, xx - (w - 1) / 2
    r = np.hypot(dy, dx)
    theta = np.arctan2(dx, dy)
    radius = 0.97 * h
    mask = (r < radius) & (np.abs(theta) < half_angle) & (r > 0.04 * h)
    return mask, np.clip(r / radius, 0, 1)


def _frame_masks(yy, xx, p: dict, c: float, deform: np.ndarray) -> dict[str, np.ndarray]:
    """Structure masks of one frame at contraction ``c`` (0 end-diastole, 1 end-systole)."""
    ry = p["ry"] * (1 - 0.12 * c)
    rx = p["rx"] * (1 - 0.25 * c)
    thick = p["thick"] * (1 + 0.4 * c)
    cy = p["cy"] - 0.3 * p["ry"] * 0.12 * c
    base = cy + 0.8 * ry  # mitral plane (along the long axis)
    ang, cx = p["angle"], p["cx"]
    u = (yy - cy) * np.cos(ang) + (xx - cx) * np.sin(ang)  # along the long axis
    inner = ellipsoid_level((yy, xx), (cy, cx), (ry, rx), angle=ang) + deform
    outer = ellipsoid_level((yy, xx), (cy, cx), (ry + thick, rx + thick), angle=ang) + deform
    lv = (inner < 1) & (u < base - cy)
    myo = (outer < 1) & ~lv & (u < base - cy + 0.4 * thick)
    la_ry, la_rx = p["la_ry"] * (1 + 0.15 * c), p["la_rx"] * (1 + 0.1 * c)
    la_cy = cy + (base - cy) * np.cos(ang) + 0.85 * la_ry
    la_cx = cx + (base - cy) * np.sin(ang)
    la_level = ellipsoid_level((yy, xx), (la_cy, la_cx), (la_ry, la_rx), angle=ang) + deform
    la = (la_level < 1) & ~lv & ~myo & (u > base - cy)
    rv_c = (cy + 0.15 * ry, cx - rx - thick - 0.9 * p["rv_rx"])
    rv_level = ellipsoid_level((yy, xx), rv_c, (0.8 * ry, p["rv_rx"] * (1 - 0.2 * c)), angle=ang)
    rv = (rv_level < 1) & ~lv & ~myo & ~la
    wall = (ellipsoid_level((yy, xx), rv_c, (0.8 * ry + 3, p["rv_rx"] + 3), angle=ang) < 1) & ~rv
    peri = (outer < (1 + 5 / p["rx"]) ** 2) & (outer >= 1) & ~la & (u < base - cy)
    rv_wall, peri = wall & ~lv & ~la & ~myo, peri & ~rv & ~wall
    return {"lv": lv, "myo": myo, "la": la, "rv": rv, "rv_wall": rv_wall, "peri": peri}


def _speckle(rng, n_frames: int, shape: tuple[int, int]) -> np.ndarray:
    """Rayleigh-like speckle magnitude, correlated across frames, mean about 1."""
    base = rng.standard_normal((2,) + shape)
    out = np.empty((n_frames,) + shape, np.float32)
    for t in range(n_frames):
        fresh = rng.standard_normal((2,) + shape)
        re, im = np.sqrt(0.7) * base + np.sqrt(0.3) * fresh
        mag = np.hypot(*(ndimage.gaussian_filter(c, (0.7, 1.4)) for c in (re, im)))
        out[t] = mag / mag.mean()
    return out


def make_echo_clip(seed: int, n_frames: int = 24, shape: Sequence[int] = (112, 112)) -> Case:
    """Synthetic apical echo clip: ``uint8`` ``(t, y, x)`` (``"tyx"``, US) with labels of
    :data:`ECHO_STRUCTURES`, spacing ``(1, 1.4, 1.4)``.

    The heart beats with a period of 18-26 frames and a seed-dependent phase; ``meta``
    holds ``fps``, ``ed_frame`` and ``es_frame`` (largest and smallest LV).
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2 or min(shape) < 32 or int(n_frames) < 1:
        raise ValueError(f"echo clip needs >= 1 frame of at least 32x32, got {n_frames}, {shape}")
    n_frames = int(n_frames)
    rng = np.random.default_rng(seed)
    h, w = shape
    half_angle = np.deg2rad(rng.uniform(33, 40))
    fov, depth = _sector(shape, half_angle)
    u = rng.uniform  # drawn in this order
    p = dict(cy=h * u(0.38, 0.44), cx=w * u(0.52, 0.58), ry=h * u(0.22, 0.27), rx=w * u(0.1, 0.13))
    p.update(thick=w * u(0.045, 0.06), angle=u(-0.18, 0.1), la_ry=h * u(0.1, 0.13))
    p.update(la_rx=w * u(0.08, 0.11), rv_rx=w * u(0.07, 0.1))
    period, phase = u(18, 26), u(0, 2 * np.pi)
    echo = dict(tissue=u(0.12, 0.2), myo=u(0.5, 0.65), blood=u(0.004, 0.01), peri=u(0.9, 1.1))
    deform = 0.12 * smooth_field(rng, shape, (4, 4))
    tissue_tex = 1 + 0.25 * smooth_field(rng, shape, (8, 8))
    speckle = _speckle(rng, n_frames, shape)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    gain = (1.0 - 0.35 * depth) * fov

    contraction = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_frames) / period + phase)
    image = np.zeros((n_frames,) + shape, np.uint8)
    labels = np.zeros((n_frames,) + shape, np.uint8)
    for t, c in enumerate(contraction):
        m = _frame_masks(yy, xx, p, float(c), deform)
        refl = echo["tissue"] * tissue_tex
        refl = np.where(m["myo"] | m["rv_wall"], echo["myo"], refl)
        refl = np.where(m["peri"], echo["peri"], refl)
        refl = np.where(m["lv"] | m["la"] | m["rv"], echo["blood"], refl)
        refl = ndimage.gaussian_filter(refl.astype(np.float32), 1.0)
        intensity = refl * speckle[t] * gain
        grey = np.log1p(60 * intensity) / np.log1p(60 * 1.8)
        image[t] = np.clip(np.rint(255 * grey), 0, 255).astype(np.uint8)
        for lab, key in ((1, "lv"), (2, "myo"), (3, "la")):
            labels[t][m[key] & fov] = lab
    lv_area = (labels == 1).sum(axis=(1, 2))
    geometry = Geometry((1.0, ECHO_PIXEL_MM, ECHO_PIXEL_MM), (0.0,) * 3, tuple(np.eye(3).ravel()))
    ed, es = int(np.argmax(lv_area)), int(np.argmin(lv_area))
    meta = dict(fps=ECHO_FPS, ed_frame=ed, es_frame=es, period_frames=round(float(period), 3))
    return phantom_case(
        "make_echo_clip", seed, image, geometry, "tyx", "US", labels, ECHO_STRUCTURES, meta
    )
