"""Train the 2D U-Net of the ``cv5-2d`` protocol (one per cross-validation fold).

Images are resized to the recipe's size (labels nearest) and normalized per channel
with the training images' statistics; random flips, cross-entropy + soft Dice, AdamW
with cosine decay, deterministic given the seed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from napari_segeval._errors import InvalidImageError, SegEvalError
from napari_segeval.models._device import pick_device
from napari_segeval.models.dense.unet2d import (
    TorchThreads,
    TrainConfig2D,
    UNet2DModel,
    as_channels,
    build_network,
    resize2d,
)
from napari_segeval.training.builtin_ct import ce_soft_dice, optimizer_step


def train_unet2d(
    images: Sequence[np.ndarray],
    labels: Sequence[np.ndarray],
    num_classes: int,
    config: TrainConfig2D | None = None,
    *,
    case_ids: Sequence[str] = (),
    structures: dict[int, str] | None = None,
    device: str | None = "cpu",
) -> UNet2DModel:
    """Train a 2D U-Net on ``(H, W)`` grey or ``(H, W, 3)`` images (sizes may differ) and
    their label maps (ids ``0 .. num_classes-1``), recording ``case_ids`` and ``structures``.
    ``device=None`` or ``"auto"``: the best available."""
    cfg = config or TrainConfig2D()
    if not images or len(images) != len(labels):
        raise SegEvalError(
            f"2D U-Net training needs matching images and labels "
            f"(got {len(images)} and {len(labels)})"
        )
    num_classes = int(num_classes)
    arrays = [as_channels(im) for im in images]
    cin = 3 if any(a.shape[0] == 3 for a in arrays) else 1
    arrays = [as_channels(im, cin) for im in images]
    pixels = np.concatenate([a.reshape(cin, -1) for a in arrays], axis=1)
    mean = pixels.mean(1).astype(np.float64)
    std = np.maximum(pixels.std(1), 1e-6).astype(np.float64)
    t0 = time.perf_counter()
    dev = pick_device(device)
    with TorchThreads(cfg.threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        shift, scale = (v[:, None, None].astype(np.float32) for v in (mean, std))
        normed = [torch.from_numpy((a - shift) / scale)[None] for a in arrays]
        x = torch.cat([resize2d(t, cfg.size, "bilinear") for t in normed])
        ys = []
        for a, lab in zip(arrays, labels):
            lab = np.asarray(lab)
            if lab.shape != a.shape[1:]:
                raise InvalidImageError(
                    f"2D U-Net: labels {lab.shape} do not match image {a.shape[1:]}"
                )
            if lab.min() < 0 or lab.max() >= num_classes:
                raise SegEvalError(
                    f"2D U-Net: label ids must lie in 0..{num_classes - 1}, "
                    f"found {int(lab.min())}..{int(lab.max())}"
                )
            lab32 = torch.from_numpy(lab.astype(np.float32))[None, None]
            ys.append(resize2d(lab32, cfg.size, "nearest")[0, 0])
        y = torch.stack(ys).long()
        net = build_network(cin, num_classes, cfg.width, cfg.levels).to(dev)
        opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda i: 0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * i / cfg.iterations))
        )
        gen = torch.Generator().manual_seed(cfg.seed)
        net.train()
        losses = []
        for _ in range(cfg.iterations):
            idx = torch.randint(len(x), (cfg.batch_size,), generator=gen)
            xb, yb = x[idx], y[idx]
            flip = torch.rand(2, cfg.batch_size, generator=gen) < 0.5
            for k, axis in enumerate((-1, -2)):  # random flips along x, then y
                xb = torch.where(flip[k, :, None, None, None], xb.flip(axis), xb)
                yb = torch.where(flip[k, :, None, None], yb.flip(axis), yb)
            logits = net(xb.to(dev))
            if num_classes > 1:
                loss = ce_soft_dice(logits, yb.to(dev), num_classes, 1.0, present_only=False)
            else:
                loss = F.cross_entropy(logits, yb.to(dev)) + torch.zeros(())
            losses.append(optimizer_step(opt, loss))
            sched.step()
    net.eval()
    meta = {
        "in_channels": cin,
        "num_classes": num_classes,
        "config": cfg.to_dict(),
        "mean": mean.tolist(),
        "std": std.tolist(),
        "train_cases": [str(c) for c in case_ids],
        "structures": {str(k): str(v) for k, v in sorted((structures or {}).items())},
        "final_loss": float(np.mean(losses[-10:])),
        "train_seconds": time.perf_counter() - t0,
        "device": str(dev),
    }
    state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    return UNet2DModel(state, meta, device=device)


__all__ = ["train_unet2d"]
