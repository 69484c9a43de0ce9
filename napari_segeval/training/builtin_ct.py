"""Train the built-in dense CT model on generated phantoms.

Phantom seeds ``0 .. n_cases-1`` (the shipped command: docs/model_cards.md); patches centred,
with probability ``--fg-prob``, on a class drawn uniformly among those present; loss CE + 1 -
mean foreground Dice; the learning rate warms up over 3 % of the time budget, then a cosine.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from napari_segeval._atomic import atomic_path
from napari_segeval.inference.intensity import (
    IntensityStats,
    clip_zscore,
    foreground_intensity_stats,
)
from napari_segeval.inference.postprocess import min_volume_from_references
from napari_segeval.inference.resample import median_spacing, resample_image, resample_labels
from napari_segeval.models._checkpoint import load_state_strict, read_checkpoint
from napari_segeval.models.dense import BUILTIN_CT_WEIGHTS, BUILTIN_PLANS
from napari_segeval.models.dense.unet import UNet3D, UNetConfig
from napari_segeval.phantoms.ct import make_ct_case


def prepare_cases(
    images: Sequence[np.ndarray],
    labels: Sequence[np.ndarray],
    spacings: Sequence[Sequence[float]],
    target: Sequence[float] | None = None,
    source: str | None = None,
) -> tuple[list, IntensityStats, tuple[float, ...]]:
    """Resample to ``target`` (default: the median spacing) and normalize with the cases'
    statistics (named ``source``): ``(cases, intensity stats, spacing)``."""
    target = median_spacing(spacings) if target is None else tuple(float(s) for s in target)
    source = source or f"{len(images)} training cases"
    stats = foreground_intensity_stats(zip(images, labels), source=source)
    out = []
    for img, lab, sp in zip(images, labels, spacings):
        x, info = resample_image(np.asarray(img, np.float32), sp, target, order=3)
        out.append((clip_zscore(x, stats), resample_labels(np.asarray(lab), info)))
    return out, stats, target


def _prepare(n_cases: int, plans: dict, cache: Path | None = None):
    """Resampled, normalized training cases, intensity statistics, lesion thresholds."""
    if cache is not None and cache.exists():
        z = np.load(cache, allow_pickle=False)
        if int(z["n"]) == n_cases and json.loads(str(z["spacing"])) == plans["spacing"]:
            stats = IntensityStats.from_dict(json.loads(str(z["stats"])))
            thr = json.loads(str(z["lesion_min_mm3"]))
            return [(z[f"x{i}"], z[f"y{i}"]) for i in range(n_cases)], stats, thr

    cases = [make_ct_case(seed) for seed in range(n_cases)]
    pairs = [(c.image, c.labels, c.spacing) for c in cases if c.labels is not None]
    images, labels, spacings = zip(*pairs)
    source = f"phantom seeds 0-{n_cases - 1}"
    data, stats, _ = prepare_cases(images, labels, spacings, plans["spacing"], source)
    # nnU-Net v1's rule on the references: each lesion class's smallest largest component
    found = min_volume_from_references(zip(labels, spacings), plans["lesions"])
    thr = {str(k): round(v, 3) for k, v in found.items()}
    if cache is not None:
        arrays: dict[str, Any] = {f"x{i}": x for i, (x, _) in enumerate(data)}
        arrays.update({f"y{i}": y for i, (_, y) in enumerate(data)})
        np.savez(
            cache,
            stats=json.dumps(stats.to_dict()),
            n=n_cases,
            spacing=json.dumps(plans["spacing"]),
            lesion_min_mm3=json.dumps(thr),
            **arrays,
        )
    return data, stats, thr


def _pad_to(a: np.ndarray, size, value) -> np.ndarray:
    pad = [(0, max(0, s - n)) for n, s in zip(a.shape, size)]
    return np.pad(a, pad, constant_values=value) if any(p[1] for p in pad) else a


def class_index(lab: np.ndarray, num_classes: int) -> list[np.ndarray]:
    """Voxel indices of every foreground class (empty arrays for absent ones)."""
    return [np.argwhere(lab == k) for k in range(1, num_classes)]


def sample_patch(rng, img, lab, patch, index, fg_prob=0.6):
    """A patch, with ``fg_prob`` centred near a voxel of a class drawn uniformly among those
    present (small organs and lesions count as much as the liver), with intensity jitter."""
    img = _pad_to(img, patch, float(img.min()))
    lab = _pad_to(lab, patch, 0)
    present = [idx for idx in index if len(idx)]
    if present and rng.random() < fg_prob:
        idx = present[rng.integers(len(present))]
        centre = idx[rng.integers(len(idx))]
        start = [
            int(np.clip(c - p // 2 + rng.integers(-p // 4, p // 4 + 1), 0, n - p))
            for c, p, n in zip(centre, patch, lab.shape)
        ]
    else:
        start = [int(rng.integers(0, n - p + 1)) for p, n in zip(patch, lab.shape)]
    sl = tuple(slice(s, s + p) for s, p in zip(start, patch))
    x = img[sl] * rng.uniform(0.9, 1.1) + rng.uniform(-0.1, 0.1)
    x = x + rng.normal(0, rng.uniform(0, 0.1), x.shape)
    return x.astype(np.float32), lab[sl].astype(np.int64)


def patch_batch(rng, data: list, index: list, patch, batch: int, fg_prob: float) -> tuple:
    """``(B, 1, *patch)`` and ``(B, *patch)`` tensors of random cases' :func:`sample_patch`."""
    picks = rng.integers(len(data), size=batch)
    xs, ys = zip(
        *(sample_patch(rng, data[i][0], data[i][1], patch, index[i], fg_prob) for i in picks)
    )
    return torch.from_numpy(np.stack(xs))[:, None], torch.from_numpy(np.stack(ys))


def optimizer_step(opt: Any, loss: Any, lr: float | None = None) -> float:
    """One optimisation step on ``loss`` (at learning rate ``lr``, if given); returns its value."""
    if lr is not None:
        for group in opt.param_groups:
            group["lr"] = lr
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss.detach())


def lr_at(frac: float, lr0: float, warmup: float = 0.03) -> float:
    """Linear warm-up over the first ``warmup`` fraction, then cosine decay to lr0/100."""
    if frac < warmup:
        return lr0 * (0.1 + 0.9 * frac / warmup)
    t = min(1.0, (frac - warmup) / (1 - warmup))
    return lr0 * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * t)))


def ce_soft_dice(logits, target, num_classes, smooth=1e-5, weight=None, present_only=True):
    """Cross-entropy + 1 - mean foreground soft Dice over the batch.

    ``present_only``: ``1 - mean`` over the classes present (all when none is); else
    ``mean(1 - dice)`` over all (the 2D U-Net's recipe); they round differently: both kept.
    """
    ce = F.cross_entropy(logits, target, weight=weight)
    prob = logits.softmax(1)
    onehot = F.one_hot(target, num_classes).movedim(-1, 1).to(prob.dtype)
    if not present_only:  # the 2D recipe sums the foreground channels only
        prob, onehot = prob[:, 1:], onehot[:, 1:]
    dims = (0, *range(2, logits.ndim))
    inter = (prob * onehot).sum(dims)
    denom = prob.sum(dims) + onehot.sum(dims)
    dice = (2 * inter + smooth) / (denom + smooth)
    if not present_only:
        return ce + (1 - dice).mean()
    present = onehot.sum(dims)[1:] > 0
    fg = dice[1:][present] if bool(present.any()) else dice[1:]
    return ce + (1 - fg.mean())


def save_checkpoint(net: Any, payload: dict, out: Path) -> None:
    """Write ``payload`` plus ``net``'s ``state_dict`` to ``out`` atomically (``torch.save``)."""
    state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out, overwrite=True) as tmp:
        torch.save({**payload, "state_dict": state}, tmp)


def train(
    out: Path,
    minutes: float,
    n_cases: int,
    threads: int,
    seed: int,
    batch: int,
    init: Path | None = None,
    lr0: float = 3e-3,
    cache: Path | None = None,
    fg_prob: float = 0.6,
    class_weights: list[float] | None = None,
    base_channels: int | None = None,
    patch_size: list[int] | None = None,
) -> dict:
    """Train for ``minutes`` and save the weights file to ``out``; returns the record."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    plans = json.loads(json.dumps(BUILTIN_PLANS))
    if base_channels:
        plans["config"]["base_channels"] = int(base_channels)
    if patch_size:
        plans["patch_size"] = [int(p) for p in patch_size]
    what = "built-in CT model weight file"
    previous = read_checkpoint(init, what) if init is not None else None  # fail before work
    t0 = time.time()
    data, stats, thresholds = _prepare(n_cases, plans, cache)
    index = [class_index(y, plans["config"]["num_classes"]) for _, y in data]
    prep_s = time.time() - t0
    print(f"prepared {n_cases} cases in {prep_s:.0f}s; stats {stats}", flush=True)
    cfg = UNetConfig(**plans["config"])
    net = UNet3D(cfg)
    if previous is not None and init is not None:
        state = previous.get("state_dict") if isinstance(previous, dict) else None
        load_state_strict(net, state, init, what, "the built-in 3D U-Net")
    opt = torch.optim.AdamW(net.parameters(), lr=lr0, weight_decay=1e-5)
    budget = minutes * 60.0
    t1 = time.time()
    it, losses = 0, []
    patch, k = plans["patch_size"], cfg.num_classes
    weight = torch.tensor(class_weights, dtype=torch.float32) if class_weights else None
    while (elapsed := time.time() - t1) < budget:
        lr = lr_at(elapsed / budget, lr0)
        x, y = patch_batch(rng, data, index, patch, batch, fg_prob)
        losses.append(optimizer_step(opt, ce_soft_dice(net(x), y, k, weight=weight), lr))
        it += 1
        if it % 25 == 0:
            print(
                f"it {it} t {elapsed / 60:.1f} min loss {np.mean(losses[-25:]):.4f} lr {lr:.2e}",
                flush=True,
            )
    record: dict[str, Any] = {
        "iterations": it,
        "train_minutes": round((time.time() - t1) / 60, 2),
        "prepare_seconds": round(prep_s, 1),
        "threads": threads,
        "batch": batch,
        "seeds": f"0-{n_cases - 1}",
        "final_loss": float(np.mean(losses[-50:])) if losses else math.nan,
        "torch": str(torch.__version__),
        "lr": lr0,
        "fg_prob": fg_prob,
        "class_weights": class_weights,
        "schedule": "warmup+cosine",
    }
    if previous is not None:
        record["previous"] = previous.get("training")
    record["total_minutes"] = round((time.time() - t0) / 60, 2)
    payload = {**plans, "intensity": stats.to_dict(), "lesion_min_mm3": thresholds}
    save_checkpoint(net, {**payload, "training": record}, out)
    print(json.dumps(record), flush=True)
    return record


#: Help of the command's options that need one.
HELP = {
    "--threads": "torch CPU threads",
    "--init": "continue from this weights file",
    "--cache": "npz cache of the prepared cases",
    "--fg-prob": "probability of a patch centred on a random structure",
    "--class-weights": "cross-entropy weight per class",
    "--base-channels": "override the architecture's first-level channels",
    "--patch": "training/inference patch",
}


def main(argv=None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, dest, kind, default in (
        ("--out", "out", Path, BUILTIN_CT_WEIGHTS),
        ("--minutes", "minutes", float, 14.0),
        ("--cases", "n_cases", int, 60),
        ("--threads", "threads", int, 2),
        ("--batch", "batch", int, 2),
        ("--seed", "seed", int, 0),
        ("--init", "init", Path, None),
        ("--lr", "lr0", float, 3e-3),
        ("--cache", "cache", Path, None),
        ("--fg-prob", "fg_prob", float, 0.6),
        ("--class-weights", "class_weights", float, None),
        ("--base-channels", "base_channels", int, None),
        ("--patch", "patch_size", int, None),
    ):
        nargs = "+" if flag == "--class-weights" else (3 if flag == "--patch" else None)
        kw: dict[str, Any] = dict(dest=dest, type=kind, default=default, nargs=nargs)
        metavar = flag[2:].upper().replace("-", "_")  # the flag's, not ``dest``
        p.add_argument(flag, help=HELP.get(flag), metavar=metavar, **kw)
    train(**vars(p.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
