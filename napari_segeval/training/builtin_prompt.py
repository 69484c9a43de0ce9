"""Train the built-in promptable model on generated phantoms.

Run ``python -m napari_segeval.training.builtin_prompt`` (the shipped
weights: ``--threads 1``, 3000 iterations, 12.6 minutes wall time on a shared
2-core machine; the loop stops at ``--iterations`` or the ``--minutes`` budget,
whichever comes first). Training uses phantom seeds below 1000 only (samples
use seeds >= 1000, benchmarks >= 2000). Each training example is one step of
propagation:

* *key* examples: a slice/frame with a (jittered) box of the structure's mask
  as prior and box channel;
* *propagation* examples: the prior is the neighbouring slice's mask (1 or 2
  slices away, either direction) with random dilation/erosion, shift and blur
  to imitate drift (one in five dilated by 3-5 px, a leaked mask the model must
  shrink back). 50% of them start near an end of the structure and step
  outward, so the target is often small or empty (the object ended), which
  teaches the model to stop instead of leaking into neighbouring tissue;
* *stale-prior* examples (half of the end examples): the prior is a structure's
  (drifted, possibly dilated) mask carried 1-3 slices past the end of the
  structure, with the previous frame being the slice just before the current one,
  exactly what a leaked prediction looks like during propagation. The target is
  the (usually empty) current mask, which teaches the model to drop a mask whose
  outline no longer matches an edge in the previous frame.

The output is a state dict in the shipped format (see
:func:`napari_segeval.models.builtin_prompt.save_weights`).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from napari_segeval.inference.windowing import to_unit
from napari_segeval.models._prompt_net import CONTEXT, PromptUNet, crop, window_from_bbox
from napari_segeval.models.builtin_prompt import DEFAULT_WEIGHTS, save_weights

CT_SHAPES = ((40, 112, 112), (32, 96, 96), (48, 128, 128), (40, 128, 112))
CT_SPACINGS = ((2.5, 1.2, 1.2), (3.0, 1.4, 1.4), (2.0, 1.0, 1.0))
#: Share of propagation examples drawn at the ends of a structure (teaches stopping).
END_FRACTION = 0.5
#: Share of end examples whose prior is carried past the end (stale prior, see module doc).
STALE_FRACTION = 0.5


class Volume:
    """One training stack: unit-range frames, labels, and the slices of each structure."""

    def __init__(self, unit: np.ndarray, labels: np.ndarray) -> None:
        self.image = torch.from_numpy(np.ascontiguousarray(unit, dtype=np.float32))
        self.labels = torch.from_numpy(labels.astype(np.int64))
        self.present = {}
        for lab in np.unique(labels):
            if lab:
                zs = np.nonzero((labels == lab).any(axis=(1, 2)))[0]
                self.present[int(lab)] = zs


def make_volumes(n_ct: int, n_echo: int, log=print) -> list[Volume]:
    """Generate the training phantoms (seeds ``0 .. n-1``, all below 1000)."""
    from napari_segeval.phantoms.ct import make_ct_case

    vols = []
    for seed in range(n_ct):
        shape = CT_SHAPES[seed % len(CT_SHAPES)]
        spacing = CT_SPACINGS[(seed // len(CT_SHAPES)) % len(CT_SPACINGS)]
        case = make_ct_case(seed, shape=shape, spacing=spacing)
        window = (float(np.random.default_rng(seed).uniform(350, 450)), 40.0)
        vols.append(Volume(to_unit(case.image, "CT", window)[0], case.labels))
    if n_echo:
        try:
            from napari_segeval.phantoms.echo import make_echo_clip
        except ImportError:
            log("echo phantoms not available: training on CT only")
            return vols
        for seed in range(n_echo):
            case = make_echo_clip(seed)
            img = case.image
            if img.ndim == 4:
                img = img[..., :3].mean(axis=-1)
            vols.append(Volume(to_unit(img, "US")[0], case.labels))
    return vols


def _bbox(mask: torch.Tensor):
    nz = mask.nonzero()
    if nz.shape[0] == 0:
        return None
    lo, hi = nz.min(0).values.tolist(), nz.max(0).values.tolist()
    return lo[0], lo[1], hi[0] + 1, hi[1] + 1


def _morph(mask: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """Imitate propagation drift: dilate/erode, shift, blur a binary (H, W) mask."""
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


def sample(vol: Volume, rng: np.random.Generator):
    """One example's full-size planes ``(5, H, W)`` (4 inputs + target) and window, or None."""
    lab = list(vol.present)[int(rng.integers(len(vol.present)))]
    zs = vol.present[lab]
    n, h, w = vol.image.shape
    if rng.random() < 0.3:  # key frame from a jittered box
        z = int(zs[rng.integers(len(zs))])
        bb = _bbox(vol.labels[z] == lab)
        j = rng.integers(-3, 4, size=4)
        y0, x0 = max(bb[0] + j[0], 0), max(bb[1] + j[1], 0)
        y1, x1 = min(max(bb[2] + j[2], y0 + 1), h), min(max(bb[3] + j[3], x0 + 1), w)
        boxm = torch.zeros((h, w))
        boxm[y0:y1, x0:x1] = 1
        cur = prev = vol.image[z]
        prior, boxc, bb = boxm, boxm, (y0, x0, y1, x1)
    else:  # propagation step from a drifted neighbour mask
        if rng.random() < END_FRACTION:  # near an end of the extent, stepping outward
            k = int(rng.integers(min(3, len(zs))))
            zp, step = (int(zs[k]), -1) if rng.random() < 0.5 else (int(zs[-1 - k]), 1)
            stale = rng.random() < STALE_FRACTION
        else:
            zp, step = int(zs[rng.integers(len(zs))]), int(rng.choice([-1, 1]))
            stale = False
        z = zp + step * (int(rng.integers(1, 4)) if stale else (1 if rng.random() < 0.8 else 2))
        if not 0 <= z < n:
            return None
        prior = _morph(vol.labels[zp] == lab, rng)
        bb = _bbox(prior > 0.5)
        if bb is None:
            return None
        zprev = z - step if stale else zp
        cur, prev, boxc = vol.image[z], vol.image[zprev], torch.zeros((h, w))
    cy, cx, half = window_from_bbox(*bb, context=CONTEXT * rng.uniform(0.85, 1.2))
    cy += rng.uniform(-0.1, 0.1) * half
    cx += rng.uniform(-0.1, 0.1) * half
    target = (vol.labels[z] == lab).float()
    return torch.stack([cur, prev, prior, boxc, target]), (cy, cx, half)


def batch(vols: list[Volume], rng: np.random.Generator, size: int, n: int, per_volume: int = 8):
    """A batch of ``n`` examples, ``per_volume`` from each randomly drawn stack."""
    xs = []
    while sum(len(x) for x in xs) < n:
        vol = vols[int(rng.integers(len(vols)))]
        if not vol.present:
            continue
        planes, wins = [], []
        while len(planes) < per_volume:
            s = sample(vol, rng)
            if s is not None:
                planes.append(s[0])
                wins.append(s[1])
        xs.append(crop(torch.stack(planes), torch.tensor(wins), size))
    out = torch.cat(xs)[:n]
    gamma = torch.from_numpy(rng.uniform(0.8, 1.25, size=(n, 1, 1, 1))).float()
    out[:, :2] = out[:, :2].clamp(0, 1) ** gamma  # intensity augmentation
    return out[:, :4].contiguous(), out[:, 4:].contiguous()


def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """BCE plus soft Dice (per example, empty targets handled by the BCE)."""
    bce = F.binary_cross_entropy_with_logits(logits, target)
    p = torch.sigmoid(logits)
    inter = (p * target).sum((1, 2, 3))
    denom = p.sum((1, 2, 3)) + target.sum((1, 2, 3))
    dice = 1 - (2 * inter + 1) / (denom + 1)
    return bce + dice.mean()


def train(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    t0 = time.time()
    vols = make_volumes(args.ct_cases, args.echo_clips)
    print(f"{len(vols)} training stacks in {time.time() - t0:.0f} s", flush=True)
    net = PromptUNet(width=args.width, depth=args.depth)
    print(f"parameters: {sum(p.numel() for p in net.parameters())}", flush=True)
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=1e-4)
    running, it, budget = None, 0, args.minutes * 60.0
    t1 = time.time()
    while True:  # cosine schedule over iterations or the time budget, whichever ends first
        done = max(it / args.iterations, (time.time() - t1) / budget)
        if done >= 1.0:
            break
        it += 1
        lr = args.lr * 0.5 * (1 + math.cos(math.pi * done))
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = batch(vols, rng, args.size, args.batch)
        loss = loss_fn(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        if it % 50 == 0:
            print(f"it {it:5d}  loss {running:.4f}  lr {lr:.2e}  {time.time() - t0:.0f} s",
                  flush=True)
    config = {"width": args.width, "depth": args.depth, "size": args.size,
              "iterations": it, "ct_cases": args.ct_cases,
              "echo_clips": args.echo_clips}
    save_weights(net.eval(), args.output, config)
    print(f"wrote {args.output} after {time.time() - t0:.0f} s", flush=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ct-cases", type=int, default=48)
    p.add_argument("--echo-clips", type=int, default=64)
    p.add_argument("--iterations", type=int, default=3000)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--width", type=int, default=12)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--minutes", type=float, default=13.0,
                   help="time budget for the optimisation loop (cosine schedule fits it)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--output", type=Path, default=DEFAULT_WEIGHTS)
    train(p.parse_args(argv))


if __name__ == "__main__":
    main()
