"""Abdominal CT phantom in HU: ``(z, y, x)``, identity LPS direction centred on the
volume (liver and right kidney at small ``x``, spine at large ``y``); organs are
ellipsoids deformed by smooth random fields.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import ndimage

from napari_segeval.io.case import Case, Geometry
from napari_segeval.phantoms._fields import ellipsoid_level, mm_grid, phantom_case, smooth_field

#: Label ids and names of the CT phantom (MSD / KiTS-like ids).
CT_STRUCTURES: dict[int, str] = {
    1: "liver",
    2: "spleen",
    3: "kidney_right",
    4: "kidney_left",
    5: "liver_tumour",
}

#: Probability that a case drawn with ``tumour=None`` contains a liver tumour.
TUMOUR_PROBABILITY = 0.75


def _check_args(shape: Sequence[int], spacing: Sequence[float]) -> tuple:
    shape = tuple(int(s) for s in shape)
    spacing = tuple(float(s) for s in spacing)
    if len(shape) != 3 or min(shape) < 8:
        raise ValueError(f"CT phantom shape must be 3 axes of at least 8 voxels, got {shape}")
    if len(spacing) != 3 or min(spacing) <= 0:
        raise ValueError(f"CT phantom spacing must be 3 positive values, got {spacing}")
    return shape, spacing


def _intensities(rng: np.random.Generator) -> dict[str, float]:
    """Per-case mean HU of each tissue (contrast-enhanced, portal-venous-like)."""
    u = rng.uniform  # drawn in this order
    hu = dict(skin=u(20, 40), fat=u(-110, -90), muscle=u(40, 50), bowel=u(15, 30))
    hu.update(liver=u(55, 65), spleen=u(45, 52), cortex=u(145, 165), medulla=u(95, 110))
    hu.update(tumour=u(20, 32), aorta=u(160, 200), ivc=u(110, 140), cancellous=u(300, 400))
    hu.update(cortical=u(800, 1000), rib=u(650, 850), disc=u(70, 100), canal=u(10, 25))
    return hu


def _body(rng, z, y, x, shape, half):
    """Normalised body radius ``rho`` (1 at the skin) and the layer boundaries."""
    ax = rng.uniform(0.84, 0.92) * half[2]
    ay = rng.uniform(0.62, 0.72) * half[1]
    y0 = rng.uniform(-0.02, 0.06) * half[1]
    wobble = 1 + 0.03 * smooth_field(rng, shape, (3, 4, 4))
    rho = np.sqrt((x / ax) ** 2 + ((y - y0) / ay) ** 2) * wobble
    skin_in = 1 - 1.5 / min(ax, ay)
    muscle_out = skin_in - rng.uniform(0.08, 0.15)
    cavity = muscle_out - rng.uniform(0.06, 0.09)
    return rho, (ax, ay, y0), (skin_in, muscle_out, cavity)


def _skeleton(rng, z, y, x, cav_axes, y0, half_z):
    """Masks of vertebral body (with discs), posterior elements, canal, paraspinal muscle."""
    cax, cay = cav_axes
    rv = 0.17 * cax
    vb_y = y0 + 0.62 * cay
    r_vb = np.sqrt(x**2 + (y - vb_y) ** 2)
    period = rng.uniform(10.0, 14.0)
    disc = ((z + rng.uniform(0, period)) % period) < 0.2 * period
    vb = np.broadcast_to(r_vb < rv, disc.shape[:1] + r_vb.shape[1:])
    canal_y = vb_y + rv + 0.1 * cax
    r_canal = np.sqrt(x**2 + (y - canal_y) ** 2)
    canal = r_canal < 0.08 * cax
    arch = (r_canal < 0.15 * cax) & ~canal & (y > vb_y + 0.7 * rv)
    spinous = ellipsoid_level((y, x), (canal_y + 0.22 * cax, 0), (0.12 * cax, 0.035 * cax)) < 1
    para = (
        np.minimum(
            ellipsoid_level((y, x), (canal_y + 0.05 * cax, -0.27 * cax), (0.16 * cay, 0.15 * cax)),
            ellipsoid_level((y, x), (canal_y + 0.05 * cax, 0.27 * cax), (0.16 * cay, 0.15 * cax)),
        )
        < 1
    )
    out = {"vb": vb, "disc": disc & vb, "cortical": vb & (r_vb > rv - 1.5)}
    out.update(posterior=arch | spinous, canal=canal, para=para, vb_y=vb_y, rv=rv)
    return out


def _ribs(rng, z, y, x, axes, rho_mid, half_z):
    """Oblique ribs: small bony ovals in the muscle layer of the upper slices."""
    ax, ay, y0 = axes
    shape = (z.shape[0], y.shape[1], x.shape[2])
    ribs = np.zeros(shape, bool)
    z_min = rng.uniform(-0.3, 0.1) * half_z
    for sign in (-1, 1):
        for deg in (40, 65, 90, 115, 140):
            t = np.deg2rad(deg + rng.uniform(-6, 6))
            cy, cx = y0 - np.cos(t) * ay * rho_mid, sign * np.sin(t) * ax * rho_mid
            oval = ellipsoid_level((y, x), (cy, cx), (2.2, 3.0), angle=t) < 1
            period, phase = rng.uniform(11, 15), rng.uniform(0, 15)
            present = (z[:, 0, 0] > z_min) & (((z[:, 0, 0] + phase) % period) < 0.45 * period)
            ribs[present] |= oval[0]
    return ribs


def _organs(rng, z, y, x, shape, cav_axes, y0, half_z):
    """Deformed ellipsoids of the liver (two lobes), spleen and both kidneys."""
    units = (half_z, cav_axes[1], cav_axes[0])  # z from the middle, y from y0, x

    def organ(centre, spread, radii, turn=None, side=1):
        """One ellipsoid: ``centre`` +- ``spread`` and ``radii`` (x 0.88-1.12) in ``units``,
        ``turn`` an (angle, +- range) rotation; ``side`` -1 mirrors x and the angle."""
        cz, cy, cx = ((m + rng.uniform(-s, s)) * u for m, s, u in zip(centre, spread, units))
        r = [f * u * rng.uniform(0.88, 1.12) for f, u in zip(radii, units)]
        angle = 0.0 if turn is None else side * (turn[0] + rng.uniform(-turn[1], turn[1]))
        return ellipsoid_level((z, y, x), (cz, y0 + cy, side * cx), r, angle=angle)

    liver = np.minimum(
        organ((0.35, -0.05, -0.4), (0.1, 0.05, 0.05), (0.8, 0.68, 0.52)),
        organ((0.55, -0.4, 0.02), (0.1, 0.05, 0.08), (0.4, 0.25, 0.35), (0.0, 0.3)),
    ) + 0.25 * smooth_field(rng, shape, (4, 6, 6))
    spleen = organ((0.45, 0.3, 0.62), (0.1, 0.05, 0.04), (0.45, 0.36, 0.2), (-0.5, 0.2))
    spleen = spleen + 0.2 * smooth_field(rng, shape, (3, 5, 5))
    kidney_r, kidney_l = (  # the right kidney lies lower than the left
        organ((zc, 0.48, 0.4), (0.1, 0.04, 0.04), (0.42, 0.2, 0.15), (0.45, 0.15), side)
        + 0.12 * smooth_field(rng, shape, (3, 4, 4))
        for side, zc in ((-1, -0.45), (1, -0.3))
    )
    return liver, spleen, kidney_r, kidney_l


def _tumour(rng, liver_mask, z, y, x, has_tumour):
    """Hypodense deformed sphere centred inside the (eroded) liver."""
    centre_draw, r_draw = rng.random(), rng.uniform(4.0, 9.0, size=3)
    deform = rng.standard_normal((3, 3, 3))
    core = ndimage.binary_erosion(liver_mask, iterations=2)
    idx = np.flatnonzero(core)
    if not has_tumour or idx.size == 0:
        return np.zeros(liver_mask.shape, bool)
    kz, jy, ix = np.unravel_index(idx[int(centre_draw * idx.size)], liver_mask.shape)
    centre = (z[kz, 0, 0], y[0, jy, 0], x[0, 0, ix])
    factors = [s / 3 for s in liver_mask.shape]
    field = ndimage.zoom(deform, factors, order=1, mode="grid-constant", grid_mode=True)
    level = ellipsoid_level((z, y, x), centre, r_draw) + 0.15 * field
    return (level < 1) & liver_mask


def make_ct_case(
    seed: int,
    shape: Sequence[int] = (40, 112, 112),
    spacing: Sequence[float] = (2.5, 1.2, 1.2),
    tumour: bool | None = None,
) -> Case:
    """Synthetic contrast-enhanced abdominal CT: ``int16`` HU ``(z, y, x)`` with ``uint8``
    labels of :data:`CT_STRUCTURES`, LPS geometry centred on the volume.

    Same seed, same arrays (samples use seeds >= ``SAMPLE_SEED_BASE``). ``tumour``
    forces a liver tumour on or off; ``None`` draws one with probability
    :data:`TUMOUR_PROBABILITY`, and the rest of the anatomy does not depend on it.
    """
    shape, spacing = _check_args(shape, spacing)
    rng = np.random.default_rng(seed)
    z, y, x = mm_grid(shape, spacing)
    half = [n * s / 2 for n, s in zip(shape, spacing)]
    hu = _intensities(rng)
    tumour_draw = rng.random()
    has_tumour = tumour_draw < TUMOUR_PROBABILITY if tumour is None else bool(tumour)

    rho, (ax, ay, y0), (skin_in, muscle_out, cav) = _body(rng, z, y, x, shape, half)
    cav_axes = (ax * cav, ay * cav)
    sk = _skeleton(rng, z, y, x, cav_axes, y0, half[0])
    ribs = _ribs(rng, z, y, x, (ax, ay, y0), (muscle_out + cav) / 2, half[0])
    liver_l, spleen_l, kid_r, kid_l = _organs(rng, z, y, x, shape, cav_axes, y0, half[0])
    texture = smooth_field(rng, shape, (6, 9, 9))
    organ_tex = smooth_field(rng, shape, (5, 12, 12))

    ao_r, ivc_r = 0.09 * cav_axes[0], 0.08 * cav_axes[0]
    vy = sk["vb_y"] - sk["rv"] - ao_r - 1.0
    aorta = ellipsoid_level((y, x), (vy, 0.14 * cav_axes[0]), (ao_r, ao_r)) < 1
    ivc = ellipsoid_level((y, x), (vy, -0.2 * cav_axes[0]), (ivc_r * 0.8, ivc_r * 1.2)) < 1
    cavity = rho < cav
    blocked = sk["vb"] | sk["posterior"] | sk["canal"] | sk["para"] | aorta | ivc | ~cavity

    labels = np.zeros(shape, np.uint8)
    for lab, level in enumerate((liver_l, spleen_l, kid_r, kid_l), start=1):  # first one wins
        labels[(level < 1) & ~blocked & (labels == 0)] = lab
    labels[_tumour(rng, labels == 1, z, y, x, has_tumour)] = 5

    img = np.full(shape, -1000.0, np.float32)
    img[rho < 1] = hu["skin"]
    img[rho < skin_in] = hu["fat"]
    img[rho < muscle_out] = hu["muscle"]
    soft = 1 / (1 + np.exp(-(texture - 0.3) * 8))
    img = np.where(cavity, hu["fat"] + (hu["bowel"] - hu["fat"]) * soft, img)
    img[sk["para"] & (rho < muscle_out)] = hu["muscle"] + 5
    gas = cavity & (texture > 1.5) & (y < y0) & (labels == 0) & ~blocked
    img[gas] = -950
    for lab, key in ((1, "liver"), (2, "spleen"), (5, "tumour")):
        img[labels == lab] = hu[key]
    kidney = (labels == 3) | (labels == 4)
    img[kidney] = hu["cortex"]
    img[kidney & (np.minimum(kid_r, kid_l) < 0.4)] = hu["medulla"]
    img += np.where(labels > 0, 4.0 * organ_tex, 0).astype(np.float32)
    img = np.where(aorta & cavity, hu["aorta"], img)
    img = np.where(ivc & cavity, hu["ivc"], img)
    img[sk["vb"]] = hu["cancellous"]
    img[sk["cortical"]] = hu["cortical"]
    img[sk["disc"]] = hu["disc"]
    img[np.broadcast_to(sk["posterior"], shape)] = hu["rib"]
    img[np.broadcast_to(sk["canal"], shape)] = hu["canal"]
    img[ribs] = hu["rib"]

    img = ndimage.gaussian_filter(img, sigma=0.7)
    noise_sd = rng.uniform(10.0, 15.0)
    img += noise_sd * rng.standard_normal(shape, dtype=np.float32)
    image = np.clip(np.rint(img), -1024, 3071).astype(np.int16)

    origin = tuple(-(n - 1) / 2 * s for n, s in zip(shape[::-1], spacing[::-1]))
    geometry = Geometry(tuple(spacing), origin, tuple(np.eye(3).ravel()))
    meta = {"has_tumour": bool((labels == 5).any()), "noise_sd_hu": round(float(noise_sd), 2)}
    return phantom_case(
        "make_ct_case", seed, image, geometry, "zyx", "CT", labels, CT_STRUCTURES, meta
    )
