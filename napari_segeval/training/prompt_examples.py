"""Training episodes of the built-in promptable model (RITM's recipe; docs/model_cards.md): one
frame of one object, a start (:data:`STARTS`; ``propbox``, a box met mid-walk, is a pass that
inference no longer makes but the shipped weights were trained with), then corrective clicks
(:mod:`.clicks`) on the frame's own output, passes as :mod:`napari_segeval.models._prompt_walks`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from napari_segeval.models._prompt_net import (
    CLICK_SIDE,
    click_maps,
    crop,
    refine_window,
    window_from_bbox,
    window_from_points,
)
from napari_segeval.models._prompt_walks import bbox
from napari_segeval.training.appearance import blur, smooth_noise
from napari_segeval.training.clicks import corrective_click, interior_point
from napari_segeval.training.prompt_sources import Stack, frames

#: Probabilities of a volume's starts (2D stacks: no propagation): a jittered box, a propagation
#: step from a drifted neighbouring mask (also past the object's ends), a box with an empty or
#: wrong prior, clicks only, a painted mask, a badly wrong output to fix (:func:`corrupt`).
STARTS = {"box": 0.18, "prop": 0.33, "propbox": 0.12, "points": 0.15, "mask": 0.10, "fix": 0.12}
#: Share of propagation steps drawn at the ends of an object, and of those stale.
END_FRACTION, STALE_FRACTION = 0.5, 0.5
#: Distribution of the number of click passes after the base pass, per start.
CLICKS = {
    "box": (0.45, 0.2, 0.2, 0.15),
    "prop": (0.6, 0.15, 0.15, 0.1),
    "propbox": (0.5, 0.2, 0.2, 0.1),
    "points": (0.0, 0.4, 0.3, 0.3),
    "mask": (0.0, 0.45, 0.3, 0.25),
    "fix": (0.0, 0.45, 0.3, 0.25),
}


def _tight(mask: torch.Tensor) -> tuple[int, int, int, int]:
    """:func:`bbox` of a mask known to be non-empty."""
    box = bbox(mask)
    if box is None:
        raise ValueError("an empty mask has no box")
    return box


def jitter_box(
    box: tuple[int, int, int, int], h: int, w: int, rng: np.random.Generator
) -> tuple[int, int, int, int]:
    """A box around an object: tight, slightly inside, loose (MedSAM2: 0-20 px out) or mixed."""
    y0, x0, y1, x1 = box
    side = max(y1 - y0, x1 - x0)
    r = rng.random()
    if r < 0.25:
        d = np.zeros(4, int)
    elif r < 0.4:  # slightly inside
        d = -rng.integers(0, max(1, int(0.08 * side)) + 1, 4)
    elif r < 0.8:  # outward, MedSAM2's rule, at most half the object's side
        d = rng.integers(0, min(20, 2 + side // 2) + 1, 4)
    else:
        d = rng.integers(-3, 4, 4)
    y0, x0 = max(0, y0 - int(d[0])), max(0, x0 - int(d[1]))
    y1, x1 = min(h, max(y1 + int(d[2]), y0 + 1)), min(w, max(x1 + int(d[3]), x0 + 1))
    return y0, x0, y1, x1


def drift(mask: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """Imitate propagation drift: dilate/erode, shift, blur a binary ``(H, W)`` mask."""
    m = mask[None, None].float()
    r = int(rng.integers(-2, 3)) if rng.random() < 0.8 else int(rng.integers(3, 6))
    if r > 0:
        m = F.max_pool2d(m, 2 * r + 1, 1, r)
    elif r < 0:
        m = -F.max_pool2d(-m, 2 * -r + 1, 1, -r)
    dy, dx = (int(v) for v in rng.integers(-1, 2, size=2))
    m = torch.roll(m, (dy, dx), dims=(2, 3))
    if rng.random() < 0.6:
        m = F.avg_pool2d(m, 3, 1, 1)
    return m[0, 0]


def painted(mask: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """A rough hand-painted version of ``mask``: drifted, with a wobbly outline."""
    m = drift(mask, rng)
    if rng.random() < 0.6:
        h, w = m.shape
        wobble = smooth_noise(rng, 1, h, w, int(rng.integers(4, 12)))[0]
        m = (blur(m[None], 2.0)[0] + rng.uniform(0.05, 0.25) * wobble > 0.5).float()
    return m


def _jitter_window(win, rng: np.random.Generator):
    cy, cx, half = win
    half *= float(rng.uniform(0.85, 1.2))
    dy, dx = float(rng.uniform(-0.1, 0.1)), float(rng.uniform(-0.1, 0.1))
    return cy + dy * half, cx + dx * half, half


@dataclass
class Episode:
    """One frame's passes: planes ``(H, W)``, prompts, the window, passes still to run; click
    passes use the window of the frame's box (``region``) or mask prompt (``painted``)."""

    cur: torch.Tensor
    prev: torch.Tensor
    target: torch.Tensor
    box: torch.Tensor
    prior: torch.Tensor
    window: tuple[float, float, float]
    passes: int
    start: str
    points: list = field(default_factory=list)
    base: bool = True
    region: tuple | None = None
    painted: torch.Tensor | None = None

    def inputs(self, size: int) -> torch.Tensor:
        """Network input ``(6, size, size)`` of the next pass."""
        prev = self.prev if self.base else self.cur
        planes = torch.stack([self.cur, prev, self.prior, self.box])[None]
        win = torch.tensor([self.window], dtype=torch.float32)
        return torch.cat([crop(planes, win, size), click_maps([self.points], win, size)], 1)[0]

    def target_crop(self, size: int) -> torch.Tensor:
        win = torch.tensor([self.window], dtype=torch.float32)
        return crop(self.target[None, None], win, size)[0]

    def add_click(self, output: torch.Tensor, rng: np.random.Generator) -> None:
        """The frame's output is ``output`` (``(H, W)``): the next pass corrects it."""
        self.base = False
        self.prior = output
        click = corrective_click(
            (self.target > 0.5).numpy(), (output > 0.5).numpy(), rng, other=0.15
        )
        if click is not None:
            self.points.append(click)
        win = refine_window(output, self.points, self.region, self.painted)
        if win is not None:
            self.window = _jitter_window(win, rng)


def _start_window(ep_box, rng):
    return _jitter_window(window_from_bbox(*ep_box), rng)


def episode(
    stack: Stack, rng: np.random.Generator, background: Stack | None = None
) -> Episode | None:
    """A random episode of ``stack`` (module doc), or ``None`` when the draw does not fit."""
    lab = list(stack.present)[int(rng.integers(len(stack.present)))]
    zs = stack.present[lab]
    n = stack.labels.shape[0]
    starts = list(STARTS) if n > 1 else ["box", "points", "mask", "fix"]
    p = np.array([STARTS[s] for s in starts])
    start = str(rng.choice(starts, p=p / p.sum()))
    flip = rng.integers(0, 2, 3)
    if start in ("box", "points", "mask", "fix"):
        z = zp = int(zs[rng.integers(len(zs))])
    else:
        z, zp, stale = _prop_frames(zs, n, rng)
        if z is None:
            return None
    zprev = zp if start not in ("prop", "propbox") or not stale else z - np.sign(z - zp)
    idx = [z, int(zprev)]
    labels = _orient(stack.labels[[z, zp]] == lab, flip)
    target, source = labels[0].float(), labels[1]
    if not target.any() and start != "prop":
        return None
    img = _orient(frames(rng, stack, idx, lab, background), flip)
    cur, prev = img[0], img[1]
    zeros = torch.zeros_like(target)
    k = int(rng.choice(4, p=CLICKS[start]))
    if start == "prop":
        prior = drift(source, rng)
        around = bbox(prior > 0.5)
        if around is None:
            return None
        return Episode(cur, prev, target, zeros, prior, _start_window(around, rng), 1 + k, start)
    if start in ("box", "propbox"):
        prior = drift(source, rng) if start == "propbox" else zeros
        b = jitter_box(_tight(target), target.shape[0], target.shape[1], rng)
        boxm = _box_mask(b, target.shape)
        if start == "box":  # a box on its own frame, its mask as the prior
            prior, prev = boxm, cur
        elif (r := rng.random()) < 0.35:  # a lost walk, or one a negative click began
            prior = zeros
        elif r < 0.5:  # a leaked or wrong prior
            other = _orient(stack.labels[[zp]], flip)[0]
            wrong = ((other > 0) & (other != lab)).float()
            leak = F.max_pool2d(source[None, None].float(), 15, 1, 7)[0, 0]
            prior = drift(wrong if rng.random() < 0.5 else leak, rng)
        return Episode(
            cur, prev, target, boxm, prior, _start_window(b, rng), 1 + k, start, region=b
        )
    ep = Episode(cur, cur, target, zeros, zeros, (0.0, 0.0, 1.0), k, start, base=False)
    if start == "points":
        at = interior_point(target.numpy() > 0.5, None if rng.random() < 0.5 else rng)
        if at is None:  # an empty target ("points" starts need one)
            return None
        ep.points.append((*at, True))
        ep.window = _points_window(ep.points, target, rng)
        return ep
    if start == "fix":
        ep.add_click(corrupt(target, _orient(stack.labels[[z]], flip)[0], lab, rng), rng)
        return ep
    ep.painted = painted(target, rng)
    ep.add_click(ep.painted, rng)
    return ep


def corrupt(
    target: torch.Tensor, labels: torch.Tensor, lab: int, rng: np.random.Generator
) -> torch.Tensor:
    """A badly wrong output for ``target``: another object, a leak, a part, or a rough mask."""
    r = rng.random()
    others = [int(v) for v in torch.unique(labels).tolist() if v and v != lab]
    if r < 0.3 and others:
        wrong = (labels == others[int(rng.integers(len(others)))]).float()
        return drift(wrong if rng.random() < 0.6 else torch.maximum(wrong, target), rng)
    h, w = target.shape
    side = smooth_noise(rng, 1, h, w, int(rng.integers(2, 5)))[0] > rng.uniform(-0.5, 0.5)
    if r < 0.65:  # a leak on one side
        k = int(rng.integers(3, 9))
        grown = F.max_pool2d(target[None, None], 2 * k + 1, 1, k)[0, 0] > 0.5
        return ((target > 0.5) | (grown & side)).float()
    if r < 0.85:  # a part of the object
        part = (target > 0.5) & side
        return part.float() if part.any() else drift(target, rng)
    return painted(target, rng)


def _points_window(points, target: torch.Tensor, rng: np.random.Generator):
    """The inference rule (:data:`CLICK_SIDE` native pixels), or a window scaled to the object."""
    if rng.random() < 0.5:
        side = CLICK_SIDE * float(np.exp(rng.uniform(-0.3, 0.3)))
    else:
        y0, x0, y1, x1 = _tight(target > 0.5)
        side = max(y1 - y0, x1 - x0) * float(np.exp(rng.uniform(np.log(0.7), np.log(5.0))))
    return _jitter_window(window_from_points(points, side), rng)


def _prop_frames(zs: np.ndarray, n: int, rng: np.random.Generator):
    """Current frame, prior's frame and whether the prior is stale (near an end, stepping out)."""
    if rng.random() < END_FRACTION:  # near an end of the extent, stepping outward
        k = int(rng.integers(min(3, len(zs))))
        zp, step = (int(zs[k]), -1) if rng.random() < 0.5 else (int(zs[-1 - k]), 1)
        stale = rng.random() < STALE_FRACTION
    else:
        zp, step = int(zs[rng.integers(len(zs))]), int(rng.choice([-1, 1]))
        stale = False
    z = zp + step * (int(rng.integers(1, 4)) if stale else (1 if rng.random() < 0.8 else 2))
    if not 0 <= z < n:
        return None, None, False
    return z, zp, stale


def _box_mask(b, shape) -> torch.Tensor:
    m = torch.zeros(shape)
    m[b[0] : b[2], b[1] : b[3]] = 1
    return m


def _orient(x: torch.Tensor, flip) -> torch.Tensor:
    """Flip ``(S, H, W)`` along y and/or x, and/or transpose y and x."""
    if flip[0]:
        x = x.flip(-2)
    if flip[1]:
        x = x.flip(-1)
    return x.transpose(-1, -2) if flip[2] else x
