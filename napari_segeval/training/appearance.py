"""Randomised appearance of a stack ``(S, H, W)``, every slice sharing the draws: :func:`render`
(class maps to images, no fixed intensity, contrast sign or texture) and :func:`restyle` (CT-, MR-,
ultrasound- or colour-like mappings, bias, blur, noise, windows). :data:`HELDOUT_APPEARANCE` is
never drawn in training."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from napari_segeval.models._prompt_walks import bbox

TRAIN_APPEARANCE = {
    "lut": ("gamma", "monotone", "nonmonotone", "inverted"),
    "noise": ("gaussian", "rician", "speckle"),
    "texture": ("smooth", "grain"),
}
HELDOUT_APPEARANCE = {
    "lut": ("posterize",),
    "noise": ("poisson", "impulse"),
    "texture": ("stripes",),
}
#: Width in pixels of the bands :func:`band_contrast` compares.
BAND = 2
#: Imaging styles that bias the draws of :func:`restyle`.
STYLES = ("ct", "mr", "us", "rgb", "generic")


def smooth_noise(rng: np.random.Generator, n: int, h: int, w: int, coarse: int) -> torch.Tensor:
    """``n`` smooth random fields ``(n, H, W)``, bicubic from a ``coarse`` grid, unit-ish std."""
    c = max(2, int(coarse))
    grid = torch.from_numpy(rng.standard_normal((n, 1, c, c)).astype(np.float32))
    return F.interpolate(grid, size=(h, w), mode="bicubic", align_corners=False)[:, 0]


def _texture_fields(rng, kind: str, s: int, h: int, w: int) -> torch.Tensor:
    """One texture ``(S, H, W)`` shared by the slices (plus a little per-slice change)."""
    if kind == "stripes":
        yy = torch.arange(h, dtype=torch.float32)[:, None]
        xx = torch.arange(w, dtype=torch.float32)[None, :]
        ang, period = rng.uniform(0, math.pi), rng.uniform(3.0, 12.0)
        phase = rng.uniform(0, 2 * math.pi)
        base = torch.sin(2 * math.pi * (yy * math.cos(ang) + xx * math.sin(ang)) / period + phase)
        return base.expand(s, h, w) * 1.2
    coarse = (
        rng.integers(4, 16) if kind == "smooth" else rng.integers(int(min(h, w) / 3), min(h, w))
    )
    base = smooth_noise(rng, 1, h, w, int(coarse))
    jitter = smooth_noise(rng, s, h, w, int(coarse))
    return base + 0.3 * jitter


def class_means(rng: np.random.Generator, n_classes: int, rgb: bool = False) -> np.ndarray:
    """Random mean intensity per class in ``[0, 1]`` (RGB: the grey of a random colour)."""
    if rgb:
        return rng.uniform(0, 1, (n_classes, 3)).mean(axis=1)
    return rng.uniform(0, 1, n_classes)


def band_contrast(
    classes: torch.Tensor, target: torch.Tensor, means: np.ndarray | None = None
) -> float:
    """Mean intensity in the band :data:`BAND` pixels wide just inside ``target`` minus just
    outside it (1.0 if a band is empty), of the class map ``classes`` rendered with ``means``, or
    of the image ``classes`` (``means=None``)."""
    b = bbox(target.any(dim=0))
    if b is None:
        return 1.0
    y0, x0, y1, x1 = b
    p = BAND + 1  # the bands' reach and one pixel more
    box = (slice(None), slice(max(0, y0 - p), y1 + p), slice(max(0, x0 - p), x1 + p))
    tb = target[box]
    t = tb.float()[:, None]
    grown = F.max_pool2d(t, 2 * BAND + 1, 1, BAND)[:, 0] > 0.5
    shrunk = -F.max_pool2d(-t, 2 * BAND + 1, 1, BAND)[:, 0] > 0.5
    inner, outer = tb & ~shrunk, grown & ~tb
    if not inner.any() or not outer.any():
        return 1.0
    if means is None:
        img = classes[box].float()
    else:
        img = torch.from_numpy(np.asarray(means, np.float32))[classes[box].long()]
    return float(img[inner].mean() - img[outer].mean())


def render(
    rng: np.random.Generator,
    classes: torch.Tensor,
    n_classes: int,
    *,
    target: torch.Tensor | None = None,
    min_contrast: float = 0.05,
    textures: tuple[str, ...] = TRAIN_APPEARANCE["texture"],
    rgb: bool = False,
    means: np.ndarray | None = None,
) -> torch.Tensor:
    """Intensities ``(S, H, W)`` of a class map: class ``means`` (default random) plus textures.

    With a boolean ``target``, random means are redrawn (<= 10 times) until its inner and outer
    bands differ by ``min_contrast``, so that the object can be seen.
    """
    s, h, w = classes.shape
    classes = classes.long()
    if means is None:
        means = class_means(rng, n_classes, rgb)
    if target is not None and target.any():
        for _ in range(10):
            if abs(band_contrast(classes, target, means)) >= min_contrast:
                break
            means = class_means(rng, n_classes, rgb)
    img = torch.from_numpy(means.astype(np.float32))[classes]
    n_fields = int(rng.integers(1, 4))
    fields = torch.stack(
        [_texture_fields(rng, str(rng.choice(textures)), s, h, w) for _ in range(n_fields)]
    )
    which = torch.from_numpy(rng.integers(0, n_fields, n_classes))[classes]
    amp = rng.uniform(0.0, 0.12, n_classes) * (rng.random(n_classes) < 0.7)
    tex = fields.gather(0, which[None]).squeeze(0)
    return img + torch.from_numpy(amp.astype(np.float32))[classes] * tex


def _piecewise(x: torch.Tensor, ys: np.ndarray) -> torch.Tensor:
    """Piecewise-linear curve through ``(i / (K - 1), ys[i])`` applied to ``x`` in [0, 1]."""
    k = len(ys) - 1
    pos = x.clamp(0, 1) * k
    i = pos.floor().clamp(max=k - 1).long()
    frac = pos - i
    table = torch.from_numpy(np.asarray(ys, np.float32))
    return table[i] * (1 - frac) + table[i + 1] * frac


def intensity_map(rng: np.random.Generator, x: torch.Tensor, kind: str) -> torch.Tensor:
    """A random intensity mapping of ``kind`` (:data:`TRAIN_APPEARANCE`/``HELDOUT``) on [0, 1]."""
    x = x.clamp(0, 1)
    if kind == "gamma":
        return x ** float(np.exp(rng.uniform(np.log(0.4), np.log(2.5))))
    if kind == "monotone":
        steps = rng.dirichlet(np.full(int(rng.integers(3, 8)), 0.7))
        return _piecewise(x, np.concatenate([[0.0], np.cumsum(steps)]))
    if kind == "nonmonotone":
        return _piecewise(x, rng.uniform(0, 1, int(rng.integers(3, 7))))
    if kind == "inverted":
        return 1.0 - x
    if kind == "posterize":
        levels = int(rng.integers(3, 7))
        y = x ** float(np.exp(rng.uniform(-0.5, 0.5)))
        return torch.floor(y * levels).clamp(max=levels - 1) / (levels - 1)
    raise ValueError(f"unknown intensity mapping {kind!r}")


def blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur of ``(S, H, W)`` with ``sigma`` pixels (reflect padding)."""
    if sigma < 0.3:
        return x
    r = max(1, math.ceil(2.5 * sigma))
    r = min(r, x.shape[-1] - 1, x.shape[-2] - 1)
    t = torch.arange(-r, r + 1, dtype=torch.float32)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    k = k / k.sum()
    y = F.pad(x[:, None], (r, r, r, r), mode="reflect")
    y = F.conv2d(y, k.view(1, 1, 1, -1))
    return F.conv2d(y, k.view(1, 1, -1, 1))[:, 0]


def add_noise(rng: np.random.Generator, x: torch.Tensor, kind: str, level: float) -> torch.Tensor:
    """Noise of ``kind`` at a ``level`` (a standard deviation in unit intensities)."""
    gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
    n = torch.randn((2,) + tuple(x.shape), generator=gen)
    if kind == "gaussian":
        return x + level * n[0]
    if kind == "rician":
        return torch.sqrt((x + level * n[0]) ** 2 + (level * n[1]) ** 2)
    if kind == "speckle":  # Rayleigh magnitude of spatially correlated complex noise
        corr = float(rng.uniform(0.5, 1.5))
        re, im = blur(n[0], corr), blur(n[1], corr)
        mag = torch.sqrt(re**2 + im**2)
        mag = mag / mag.mean().clamp(min=1e-6)
        return x * (1 + (mag - 1) * min(1.0, 4 * level))
    if kind == "poisson":
        photons = 0.5 / max(level, 1e-3) ** 2  # std = level at intensity 0.5
        return torch.poisson(x.clamp(min=0) * photons, generator=gen) / photons
    if kind == "impulse":
        u = torch.rand(tuple(x.shape), generator=gen)
        p = min(0.1, level * 0.3)
        x = torch.where(u < p / 2, torch.zeros_like(x), x)
        return torch.where(u > 1 - p / 2, torch.ones_like(x), x)
    raise ValueError(f"unknown noise {kind!r}")


def sector(h: int, w: int, rng: np.random.Generator) -> torch.Tensor:
    """An ultrasound fan: 1 inside a sector from the top centre, 0 outside."""
    yy = torch.arange(h, dtype=torch.float32)[:, None] + rng.uniform(1, 0.2 * h)
    xx = torch.arange(w, dtype=torch.float32)[None, :] - (w - 1) / 2 + rng.uniform(-0.1, 0.1) * w
    theta = torch.atan2(xx, yy)
    r = torch.sqrt(xx**2 + yy**2)
    return ((theta.abs() < rng.uniform(0.5, 0.8)) & (r < rng.uniform(0.9, 1.3) * h)).float()


def restyle(
    rng: np.random.Generator,
    x: torch.Tensor,
    *,
    style: str | None = None,
    families: dict = TRAIN_APPEARANCE,
    strength: float = 1.0,
) -> torch.Tensor:
    """A random restyling of ``x`` ``(S, H, W)`` in ``[0, 1]``, into ``[0, 1]``.

    ``style`` (:data:`STYLES`, default random) biases the noise and field of view; ``families``
    lists the mappings and noises; ``strength`` in ``[0, 1]`` scales the chance of a non-trivial
    mapping and the noise and bias levels (0: only mild changes).
    """
    _, h, w = x.shape
    style = style or str(rng.choice(STYLES))
    luts, noises = list(families["lut"]), list(families["noise"])
    if rng.random() < 0.8 * strength:
        x = intensity_map(rng, x, str(rng.choice(luts)))
        if "inverted" in luts and rng.random() < 0.15:
            x = 1.0 - x
    else:
        x = x.clamp(0, 1) ** float(np.exp(rng.uniform(-0.25, 0.25)))
    if style == "mr" or rng.random() < 0.3 * strength:  # multiplicative bias field
        amp = rng.uniform(0.1, 0.6 if style == "mr" else 0.35) * strength
        x = x * torch.exp(amp * smooth_noise(rng, 1, h, w, int(rng.integers(2, 5))))
    if style == "us":
        x = x * torch.linspace(1.0, rng.uniform(0.4, 1.0), h)[:, None]
    if rng.random() < 0.3:  # lower resolution
        f = rng.uniform(1.3, 3.0)
        small = F.interpolate(x[:, None], scale_factor=1 / f, mode="area")
        x = F.interpolate(small, size=(h, w), mode="bilinear", align_corners=False)[:, 0]
    x = blur(x, float(rng.uniform(0, 1.5)) if rng.random() < 0.5 else 0.0)
    noise = {"ct": "gaussian", "mr": "rician", "us": "speckle"}.get(style)
    if noise is None or noise not in noises:
        noise = str(rng.choice(noises))
    level = float(np.exp(rng.uniform(np.log(0.005), np.log(0.12)))) * strength
    x = add_noise(rng, x, noise, level)
    if style == "us":
        x = blur(x, float(rng.uniform(0.0, 0.8)))
        if rng.random() < 0.5:
            x = x * sector(h, w, rng)
    lo, hi = rng.uniform(-0.15, 0.2), rng.uniform(0.8, 1.15)  # a window that may clip
    return ((x - lo) / (hi - lo)).clamp(0, 1)
