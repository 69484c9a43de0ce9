"""Held-out volumes (shapes, appearances, seeds >= :data:`HELDOUT_SEED_BASE`) the built-in
promptable model never trained on, for ``benchmarks/bench_builtin_prompt.py``. Class means are
redrawn until each object's bands differ by :data:`MIN_CONTRAST`, the appearance (<= 10 times) until
the image's do by :data:`FINAL_CONTRAST`; an object still unseen leaves the labels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from napari_segeval.training import appearance, shapes

HELDOUT_SEED_BASE = 2000
MIN_CONTRAST = 0.12
FINAL_CONTRAST = 0.08


def make_heldout_volume(
    seed: int, shape: Sequence[int] = (32, 128, 128)
) -> tuple[np.ndarray, np.ndarray]:
    """A held-out volume: float32 image ``shape`` in ``[0, 1]`` and uint8 object labels."""
    if seed < HELDOUT_SEED_BASE:
        raise ValueError(f"held-out seeds start at {HELDOUT_SEED_BASE}, got {seed}")
    return _volume(seed, shape, shapes.HELDOUT_SHAPES, appearance.HELDOUT_APPEARANCE)


def make_tuning_volume(
    seed: int, shape: Sequence[int] = (32, 128, 128)
) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`make_heldout_volume` with the training families (seeds 500-999), for tuning."""
    if not 500 <= seed < 1000:
        raise ValueError(f"tuning seeds are 500-999, got {seed}")
    return _volume(seed, shape, shapes.TRAIN_SHAPES, appearance.TRAIN_APPEARANCE)


def _volume(seed: int, shape, families, looks: dict) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scene = shapes.make_scene(rng, shape, families, n_objects=(2, 4), nested=0.1)
    classes = torch.from_numpy(scene.classes.astype(np.int64))
    labels = torch.from_numpy(scene.labels)
    ids = range(1, int(labels.max()) + 1)
    best: torch.Tensor | None = None
    best_seen: dict[int, float] = {}
    for _ in range(10):
        means = _visible_means(rng, classes, labels, scene.n_classes)
        img = appearance.render(
            rng, classes, scene.n_classes, means=means, textures=looks["texture"]
        )
        style = str(rng.choice(["ct", "mr", "us", "generic"]))
        img = appearance.restyle(rng, img, style=style, families=looks)
        seen = {k: abs(appearance.band_contrast(img, labels == k)) for k in ids}
        if best is None or min(seen.values(), default=1) > min(best_seen.values(), default=1):
            best, best_seen = img, seen
        if min(seen.values(), default=1.0) >= FINAL_CONTRAST:
            break
    out = scene.labels.copy()
    for k, c in best_seen.items():
        if c < FINAL_CONTRAST:
            out[out == k] = 0
    assert best is not None  # the first try is always kept
    return best.numpy().astype(np.float32), out


def _visible_means(rng, classes: torch.Tensor, labels: torch.Tensor, n: int) -> np.ndarray:
    best, best_score = None, -1.0
    masks = [labels == k for k in range(1, int(labels.max()) + 1)]
    for _ in range(50):
        means = appearance.class_means(rng, n)
        score = min((abs(appearance.band_contrast(classes, m, means)) for m in masks), default=1.0)
        if score >= MIN_CONTRAST:
            return means
        if score > best_score:
            best, best_score = means, score
    assert best is not None  # a contrast is never below -1
    return best
