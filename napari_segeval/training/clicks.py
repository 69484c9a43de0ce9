"""Simulated corrective clicks: where a person would click to fix a predicted mask.

The evaluation's rule (:func:`napari_segeval.prompts.correction.error_regions`,
:func:`~napari_segeval.prompts.correction.corrects_misses`: the larger error region,
at its most interior pixel); training also draws a random deep pixel and sometimes the
smaller region, so clicks do not always sit at the centre of an error. Coordinates are
pixel centres ``(y, x)``.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from napari_segeval.prompts.correction import corrects_misses, error_regions, interior_pixel


def _distance(region: np.ndarray) -> np.ndarray:
    """Distance to the nearest pixel outside ``region`` (outside the image counts)."""
    padded = np.pad(region, 1)
    return ndimage.distance_transform_edt(padded)[1:-1, 1:-1]


def interior_point(
    region: np.ndarray, rng: np.random.Generator | None = None, depth: float = 0.5
) -> tuple[int, int] | None:
    """The most interior pixel of ``region`` (``rng=None``), or a random deep one.

    Without ``rng``: the evaluation's pixel
    (:func:`napari_segeval.prompts.correction.interior_pixel`, ties to the first in
    row-major order). With ``rng``, a random pixel among those at least ``depth``
    times the largest distance from the boundary. ``None`` for an empty region.
    """
    region = np.asarray(region, bool)
    if not region.any():
        return None
    if rng is None:
        y, x, _ = interior_pixel(region)
        return y, x
    dist = _distance(region)
    ys, xs = np.nonzero(dist >= max(depth * float(dist.max()), min(1.0, float(dist.max()))))
    k = int(rng.integers(ys.size))
    return int(ys[k]), int(xs[k])


def corrective_click(
    reference: np.ndarray,
    prediction: np.ndarray,
    rng: np.random.Generator | None = None,
    other: float = 0.0,
) -> tuple[int, int, bool] | None:
    """The next click ``(y, x, positive)`` that corrects ``prediction``, or ``None`` if exact.

    Deterministic with ``rng=None``: the evaluation's rule on one slice
    (:func:`napari_segeval.prompts.next_correction`'s click: the larger error
    region, a tie going to the false negatives, at its most interior pixel). With
    ``rng``, the pixel is a random deep one (:func:`interior_point`) and, with
    probability ``other``, the smaller non-empty error region is corrected instead.
    ``reference`` and ``prediction`` are boolean ``(H, W)`` masks of one slice.
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
