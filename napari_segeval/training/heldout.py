"""Held-out volumes: objects and appearances the built-in promptable model never trained on.

The benchmark of the built-in model (``benchmarks/bench_builtin_prompt.py``) measures
it on volumes that differ from everything training draws:

* shapes of the held-out families only (:data:`~.shapes.HELDOUT_SHAPES`: stars with
  4-8 arms that rotate along z, superellipses - rounded rectangles);
* textures of a held-out family (stripes) and, on most volumes, a held-out intensity
  mapping (posterised: 3-6 grey levels) and held-out noise (Poisson or impulse
  noise) (:data:`~.appearance.HELDOUT_APPEARANCE`); bias fields, blur and lower
  resolution are drawn as in training;
* seeds >= :data:`HELDOUT_SEED_BASE` (training uses its own random stream and
  phantom seeds below 1000, samples 1000-1999).

Every object is kept visible: the class means are redrawn until each object's band
just inside differs from the band just outside by at least :data:`MIN_CONTRAST`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from napari_segeval.training import appearance, shapes

HELDOUT_SEED_BASE = 2000
MIN_CONTRAST = 0.12


def make_heldout_volume(seed: int, shape: Sequence[int] = (32, 128, 128)
                        ) -> tuple[np.ndarray, np.ndarray]:
    """A held-out volume: float32 image ``shape`` in ``[0, 1]`` and uint8 object labels.

    Examples
    --------
    >>> image, labels = make_heldout_volume(2000, shape=(12, 64, 64))
    >>> image.shape, image.dtype, labels.dtype, int(labels.max()) >= 1
    ((12, 64, 64), dtype('float32'), dtype('uint8'), True)
    """
    if seed < HELDOUT_SEED_BASE:
        raise ValueError(f"held-out seeds start at {HELDOUT_SEED_BASE}, got {seed}")
    rng = np.random.default_rng(seed)
    scene = shapes.make_scene(rng, shape, shapes.HELDOUT_SHAPES, n_objects=(2, 4),
                              nested=0.1)
    classes = torch.from_numpy(scene.classes.astype(np.int64))
    labels = torch.from_numpy(scene.labels)
    means = _visible_means(rng, classes, labels, scene.n_classes)
    img = appearance.render(rng, classes, scene.n_classes, means=means,
                            textures=appearance.HELDOUT_APPEARANCE["texture"])
    img = appearance.restyle(rng, img, style=str(rng.choice(["ct", "mr", "us", "generic"])),
                             families=appearance.HELDOUT_APPEARANCE)
    return img.numpy().astype(np.float32), scene.labels


def _visible_means(rng, classes: torch.Tensor, labels: torch.Tensor, n: int) -> np.ndarray:
    best, best_score = None, -1.0
    for _ in range(50):
        means = appearance.class_means(rng, n)
        score = min((abs(appearance.band_contrast(classes, labels == k, means))
                     for k in range(1, int(labels.max()) + 1)), default=1.0)
        if score >= MIN_CONTRAST:
            return means
        if score > best_score:
            best, best_score = means, score
    return best
