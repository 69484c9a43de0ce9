"""Simulated corrective clicks at pixel centres: the evaluation's, or varied for training."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from napari_segeval.prompts.correction import corrects_misses, error_regions, interior_pixel


def interior_point(
    region: np.ndarray, rng: np.random.Generator | None = None
) -> tuple[int, int] | None:
    """The evaluation's most interior pixel (``rng=None``), else a random pixel at least half
    the largest distance from the boundary; ``None`` for an empty region."""
    region = np.asarray(region, bool)
    if not region.any():
        return None
    if rng is None:
        y, x, _ = interior_pixel(region)
        return y, x
    dist = ndimage.distance_transform_edt(np.pad(region, 1))[1:-1, 1:-1]  # the border is outside
    ys, xs = np.nonzero(dist >= max(0.5 * float(dist.max()), min(1.0, float(dist.max()))))
    k = int(rng.integers(ys.size))
    return int(ys[k]), int(xs[k])


def corrective_click(
    reference: np.ndarray,
    prediction: np.ndarray,
    rng: np.random.Generator | None = None,
    other: float = 0.0,
) -> tuple[int, int, bool] | None:
    """The click ``(y, x, positive)`` correcting ``prediction`` on one slice, ``None`` if exact.

    ``rng=None``: :func:`napari_segeval.prompts.next_correction`'s click (the larger error
    region, ties to the misses, its most interior pixel). With ``rng``: a random deep pixel,
    and with probability ``other`` the smaller non-empty error region (training: clicks that
    are not always central).
    """
    fn, fp = error_regions(reference, prediction)
    n_fn, n_fp = int(fn.sum()), int(fp.sum())
    if n_fn == 0 and n_fp == 0:
        return None
    positive = corrects_misses(n_fn, n_fp)
    if rng is not None and min(n_fn, n_fp) > 0 and rng.random() < other:
        positive = not positive
    point = interior_point(fn if positive else fp, rng)
    assert point is not None  # the chosen region is not empty
    return point[0], point[1], positive
