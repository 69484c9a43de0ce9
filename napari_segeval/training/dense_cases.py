"""Train the built-in 3D U-Net on a data set's own cases for a fixed number of steps (the
``uncertainty`` protocol's ``li2026`` trainer): :mod:`.builtin_ct`'s sampler and loss, cases
resampled to their median spacing with nnU-Net's CT normalization; ``"sgd-poly"`` is nnU-Net's SGD
(momentum 0.99, Nesterov, ``lr0 (1 - t/T)**0.9``), ``"adamw-cosine"`` :mod:`.builtin_ct`'s schedule,
``loss="duo"`` :mod:`.duo`. A fixed step count lets a seed fix the run."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from napari_segeval._cancel import check_cancel
from napari_segeval._errors import SegEvalError
from napari_segeval.models.dense import BUILTIN_PLANS
from napari_segeval.models.dense.unet import UNet3D, UNetConfig
from napari_segeval.models.dense.unet2d import TorchThreads
from napari_segeval.training.builtin_ct import (
    ce_soft_dice,
    class_index,
    lr_at,
    optimizer_step,
    patch_batch,
    prepare_cases,
    save_checkpoint,
)
from napari_segeval.training.duo import NOISE_START, duo_loss, noise_head

OPTIMIZERS = ("sgd-poly", "adamw-cosine")
LOSSES = ("ce-dice", "duo")


@dataclass(frozen=True)
class DenseTrainConfig:
    """Recipe of :func:`train_dense_cases` (recorded in the weights file)."""

    iterations: int = 300
    batch: int = 2
    lr: float = 0.01
    optimizer: str = "sgd-poly"
    patch_size: tuple[int, int, int] = (32, 48, 48)
    base_channels: int = 8
    levels: int = 4
    fg_prob: float = 0.6
    seed: int = 0
    threads: int = 2
    loss: str = "ce-dice"
    duo_alpha: float = 0.5

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        d = asdict(self)
        d["patch_size"] = list(self.patch_size)
        return d


def _step_loss(
    net: Any, noise: Any, x: Any, y: Any, num_classes: int, config: DenseTrainConfig, step: int
) -> Any:
    """The batch loss: cross-entropy + soft Dice, or DUO (with the noise head)."""
    if noise is None:
        return ce_soft_dice(net(x), y, num_classes)
    h = net.features(x)
    denoise = step >= NOISE_START * config.iterations
    return duo_loss(net.head(h), noise(h), y, num_classes, alpha=config.duo_alpha, denoise=denoise)


def train_dense_cases(
    images: Sequence[np.ndarray],
    labels: Sequence[np.ndarray],
    spacings: Sequence[Sequence[float]],
    num_classes: int,
    out: str | Path,
    config: DenseTrainConfig | None = None,
    *,
    structures: dict[int, str] | None = None,
    modality: str = "CT",
    case_ids: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
) -> dict:
    """Train the built-in 3D U-Net on ``(z, y, x)`` volumes and label maps (ids ``0 ..
    num_classes-1``, spacings in mm) and save it at ``out``; returns the training record.

    ``structures`` and ``modality`` go into the plans, ``case_ids`` into the record;
    ``progress(step, iterations)`` is called every 10 steps and at the end.
    """
    config = config or DenseTrainConfig()
    if config.optimizer not in OPTIMIZERS:
        raise SegEvalError(f"optimizer must be one of {OPTIMIZERS}, got {config.optimizer!r}")
    if config.loss not in LOSSES:
        raise SegEvalError(f"loss must be one of {LOSSES}, got {config.loss!r}")
    if not images:
        raise SegEvalError("no training cases")
    if num_classes < 2:
        raise SegEvalError(f"training needs at least 2 classes, got {num_classes}")
    t0 = time.perf_counter()
    data, stats, spacing = prepare_cases(images, labels, spacings)
    too_big = [int(y.max()) for _, y in data if int(y.max()) >= num_classes]
    if too_big:
        raise SegEvalError(f"label id {max(too_big)} >= num_classes {num_classes}")
    index = [class_index(y, num_classes) for _, y in data]
    channels, levels = int(config.base_channels), int(config.levels)
    architecture = {"in_channels": 1, "num_classes": int(num_classes), "base_channels": channels}
    cfg = UNetConfig(**architecture, levels=levels)
    rng = np.random.default_rng(config.seed)
    losses: list[float] = []
    with TorchThreads(config.threads):
        torch.manual_seed(config.seed)
        net = UNet3D(cfg)
        noise = None
        if config.loss == "duo":
            noise = noise_head(int(config.base_channels), cfg.num_classes)
        params = [*net.parameters(), *(noise.parameters() if noise else [])]
        sgd = config.optimizer == "sgd-poly"
        opt: torch.optim.Optimizer
        if sgd:
            opt = torch.optim.SGD(
                params, lr=config.lr, momentum=0.99, nesterov=True, weight_decay=3e-5
            )
        else:
            opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=1e-5)
        patch = list(config.patch_size)
        for step in range(int(config.iterations)):
            check_cancel(cancel, "training")
            frac = step / max(config.iterations, 1)
            lr = config.lr * (1.0 - frac) ** 0.9 if sgd else lr_at(frac, config.lr)
            x, y = patch_batch(rng, data, index, patch, config.batch, config.fg_prob)
            loss = _step_loss(net, noise, x, y, cfg.num_classes, config, step)
            losses.append(optimizer_step(opt, loss, lr))
            if progress is not None and ((step + 1) % 10 == 0 or step + 1 == config.iterations):
                progress(step + 1, int(config.iterations))
    record = {
        "iterations": int(config.iterations),
        "config": config.to_dict(),
        "final_loss": float(np.mean(losses[-20:])) if losses else math.nan,
        "seconds": round(time.perf_counter() - t0, 1),
        "train_cases": list(case_ids),
        "torch": str(torch.__version__),
        "loss": (
            "cross-entropy + (1 - soft Dice)"
            if noise is None
            else f"DUO (Li et al. 2026): per class (BCE + 1 - soft Dice) / (1 + "
            f"{config.duo_alpha:g} S), targets denoised by a noise head"
        ),
    }
    plans = {
        **json.loads(json.dumps(BUILTIN_PLANS)),
        "config": {**architecture, "levels": levels},
        "spacing": [float(s) for s in spacing],
        "patch_size": [int(p) for p in config.patch_size],
        "modality": modality,
        "structures": {str(k): str(v) for k, v in (structures or {}).items()},
        "organs": [],
        "lesions": [],
        "lesion_min_mm3": {},
        "intensity": stats.to_dict(),
        "training": record,
    }
    save_checkpoint(net, plans, Path(out))
    return record


__all__ = ["LOSSES", "OPTIMIZERS", "DenseTrainConfig", "train_dense_cases"]
