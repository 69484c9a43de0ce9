"""Gaussian-weighted sliding-window inference, differentiable, as MONAI's
``sliding_window_inference`` (``"gaussian"``, constant padding) places and weights windows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._cancel import check_cancel

if TYPE_CHECKING:  # pragma: no cover
    import torch


def window_starts(size: int, patch: int, overlap: float) -> list[int]:
    """Start indices of the windows along one axis (last one ends at ``size >= patch``)."""
    if patch > size:
        raise ValueError(f"patch {patch} larger than size {size}: pad the image first")
    step = patch if patch == size else max(int(patch * (1 - overlap)), 1)
    n = next(d for d in range(math.ceil(size / step)) if d * step + patch >= size) + 1
    return [i * step - max(i * step + patch - size, 0) for i in range(n)]


def window_grid(
    shape: Sequence[int], patch: Sequence[int], overlap: float | Sequence[float]
) -> list[tuple[slice, ...]]:
    """Slices of every window over ``shape`` (C order of the start indices)."""
    ov = np.broadcast_to(np.asarray(overlap, float), (len(shape),))  # one, or one per axis
    starts = [window_starts(s, p, o) for s, p, o in zip(shape, patch, ov)]
    return [tuple(slice(s, s + p) for s, p in zip(st, patch)) for st in itertools.product(*starts)]


def gaussian_weights(
    patch: Sequence[int], sigma_scale: float = 0.125, min_weight: float = 1e-3
) -> np.ndarray:
    """Gaussian importance map of a patch (peak 1), float32; ``sigma_scale`` of the patch
    size, floored at ``min_weight`` (MONAI: 1e-3; 0: zeros become the smallest positive
    weight, as nnU-Net)."""
    import torch

    t = None
    for p in patch:  # float32 torch ops, so the map is bit-identical to MONAI's
        x = torch.arange(-(p - 1) / 2.0, (p - 1) / 2.0 + 1, dtype=torch.float32)
        g = torch.exp(x**2 / (-2 * (sigma_scale * p) ** 2))
        t = g if t is None else t.unsqueeze(-1) * g
    if t is None:
        raise ValueError("a patch has at least one axis")
    w = t.numpy().astype(np.float32)
    pos = w[w > 0]
    if pos.size:
        w[w == 0] = pos.min()
    floor = max(float(w.min()), float(min_weight))
    return np.maximum(w, np.float32(floor)).astype(np.float32)


def sliding_window_logits(
    predictor: Callable[[torch.Tensor], torch.Tensor],
    image: torch.Tensor,
    patch_size: Sequence[int],
    *,
    overlap: float = 0.5,
    batch_size: int = 2,
    mirror_axes: Sequence[int] = (),
    accumulate_device: Any = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
) -> torch.Tensor:
    """Blend ``predictor`` outputs ``(B, K, *patch)`` over Gaussian-weighted windows of
    ``image`` ``(N, C, *spatial)``: float32 ``(N, K, *spatial)``, differentiable.

    ``overlap``: the fraction a window shares with its neighbour; every combination of
    flips of ``mirror_axes`` is averaged; ``accumulate_device="cpu"`` bounds accelerator
    memory to one batch of windows; ``progress(done, total)`` after each batch.
    """
    import torch
    import torch.nn.functional as F

    nsp = image.ndim - 2
    patch = tuple(int(p) for p in patch_size)
    if len(patch) != nsp:
        raise ValueError(f"patch_size {patch} does not match {nsp} spatial axes")
    if not 0 <= overlap < 1:
        raise ValueError(f"overlap must be in [0, 1), got {overlap}")
    src_shape = tuple(image.shape[2:])
    short = [max(p - n, 0) for n, p in zip(src_shape, patch)]  # zero-padded symmetrically
    pads = [(d // 2, d - d // 2) for d in short]
    if any(a or b for a, b in pads):
        flat = [v for a, b in reversed(pads) for v in (a, b)]
        image = F.pad(image, flat, mode="constant", value=0.0)
    shape = tuple(image.shape[2:])
    slices = window_grid(shape, patch, overlap)
    n_img = image.shape[0]
    jobs = [(b, s) for b in range(n_img) for s in slices]
    acc_dev = torch.device(accumulate_device) if accumulate_device is not None else image.device
    w = torch.from_numpy(gaussian_weights(patch)).to(image.device)
    flips = [c for r in range(len(mirror_axes) + 1) for c in itertools.combinations(mirror_axes, r)]
    out = None
    norm = torch.zeros(shape, dtype=torch.float32, device=acc_dev)
    w_acc = w.to(acc_dev)
    for s in slices:
        norm[s] += w_acc
    total = len(jobs)
    for i in range(0, total, batch_size):
        check_cancel(cancel, "sliding-window inference")
        chunk = jobs[i : i + batch_size]
        batch = torch.cat([image[(slice(b, b + 1), slice(None)) + s] for b, s in chunk])
        pred = None
        for axes in flips:
            dims = [a + 2 for a in axes]
            p = predictor(batch.flip(dims) if dims else batch)
            p = p.flip(dims) if dims else p
            pred = p if pred is None else pred + p
        assert pred is not None  # flips holds () at least
        pred = pred.float()
        if len(flips) > 1:
            pred = pred / len(flips)
        pred = pred * w
        if out is None:
            out = torch.zeros((n_img, pred.shape[1], *shape), dtype=torch.float32, device=acc_dev)
        pred = pred.to(acc_dev)
        for j, (b, s) in enumerate(chunk):
            out[(b, slice(None)) + s] += pred[j]
        if progress is not None:
            progress(min(i + batch_size, total), total)
    assert out is not None  # jobs holds a window at least
    out = out.div_(norm) if not torch.is_grad_enabled() else out / norm
    if any(a or b for a, b in pads):
        crop = tuple(slice(a, a + n) for (a, _), n in zip(pads, src_shape))
        out = out[(slice(None), slice(None)) + crop]
    return out
