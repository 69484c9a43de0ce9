"""Per-slice counts and Dice along any axis in one pass, and which slice fails.

A simulated correction's slice: :func:`~napari_segeval.prompts.correction.most_wrong_slice`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from napari_segeval.metrics.overlap import (
    label_pair,
    labels_to_report,
    map_threads,
    overlap_from_counts,
)


def slice_counts(ref: np.ndarray, pred: np.ndarray, n: int) -> np.ndarray:
    """(3, n) counts of one slice (or region): true positives, reference, predicted."""
    r = np.ascontiguousarray(ref).reshape(-1)
    p = np.ascontiguousarray(pred).reshape(-1)
    fg = (r != 0) | (p != 0)
    rr = r[fg]
    pp = p[fg]
    out = np.empty((3, n), np.int64)
    out[0] = np.bincount(rr[rr == pp], minlength=n)
    out[1] = np.bincount(rr, minlength=n)
    out[2] = np.bincount(pp, minlength=n)
    out[:, 0] += r.size - rr.size
    return out


def per_slice_counts(
    reference: np.ndarray, prediction: np.ndarray, axis: int = 0, n_labels: int | None = None
) -> np.ndarray:
    """Counts of every slice along ``axis``: array (n_slices, 3, n_labels).

    ``[:, 0]`` true positives, ``[:, 1]`` reference voxels, ``[:, 2]`` predicted
    voxels, per label id.
    """
    ref, pred, n = label_pair(reference, prediction, n_labels)
    ref, pred = np.moveaxis(ref, axis, 0), np.moveaxis(pred, axis, 0)
    out = np.zeros((ref.shape[0], 3, n), np.int64)

    def work(i: int) -> None:
        out[i] = slice_counts(ref[i], pred[i], n)

    map_threads(work, range(ref.shape[0]))
    return out


def dice_from_counts(counts: np.ndarray, empty: str = "nan") -> np.ndarray:
    """Dice from (..., 3, n) counts, ``empty`` where a structure is in neither map."""
    tp, ref_n, pred_n = (counts[..., i, :] for i in range(3))
    return overlap_from_counts(tp, ref_n, pred_n, empty=empty)["dice"]


def per_slice_dice(
    reference: np.ndarray,
    prediction: np.ndarray,
    axis: int = 0,
    labels: Iterable[int] | None = None,
    empty: str = "nan",
) -> dict[int, np.ndarray]:
    """Dice of every slice along ``axis`` for each structure (where a prediction fails).

    Parameters
    ----------
    reference, prediction : numpy.ndarray
        Label maps of one shape.
    axis : int
        Slicing axis (0 = z for volumes, t for videos).
    labels : iterable of int, optional
        Labels to report; default every non-zero label present.
    empty : {"nan", "one", "zero"}
        Value on slices where the structure is absent from both maps.

    Returns
    -------
    dict of int to numpy.ndarray
        One float array of length ``shape[axis]`` per label.
    """
    wanted, n = labels_to_report(reference, prediction, labels)
    counts = per_slice_counts(reference, prediction, axis, n)
    if wanted is None:
        present = counts[:, 1:].sum(axis=(0, 1))
        wanted = [int(v) for v in np.flatnonzero(present) if v != 0]
    dice = dice_from_counts(counts, empty)
    return {lab: dice[:, lab].copy() for lab in wanted}


def worst_slice_from_counts(counts: np.ndarray) -> int | None:
    """The slice where one structure fares worst, from its per-slice counts.

    The rule of the Dice panel's *Worst slice* button and the Results panel:

    1. slices where the structure is absent from both maps are skipped (their Dice is
       undefined, not low); absent from every slice, the answer is None;
    2. the lowest Dice wins;
    3. among equal Dice (a structure missed on every slice scores 0 on all) the most
       wrong voxels (false positives + false negatives) win;
    4. among slices equal on both, the first.

    Parameters
    ----------
    counts : numpy.ndarray
        ``(n_slices, 3)`` true positives, reference voxels and predicted voxels of
        the structure per slice (``per_slice_counts(...)[:, :, label]``,
        :meth:`~napari_segeval.metrics.LiveMetrics.slice_counts`).

    Returns
    -------
    int or None
    """
    tp, ref_n, pred_n = np.asarray(counts, dtype=np.int64).reshape(-1, 3).T
    present = ref_n + pred_n > 0
    if not present.any():
        return None
    dice = np.where(present, 2.0 * tp / np.maximum(ref_n + pred_n, 1), np.inf)
    errors = ref_n + pred_n - 2 * tp
    order = np.lexsort((-errors, dice))  # by Dice, then by errors descending; stable
    return int(order[0])


def worst_slice(
    reference: np.ndarray, prediction: np.ndarray, label: int, axis: int = 0
) -> int | None:
    """The slice along ``axis`` where structure ``label`` fares worst
    (:func:`worst_slice_from_counts`); None for 2D arrays and a structure in neither map.
    """
    if np.ndim(reference) < 3:
        return None
    return worst_slice_from_counts(_label_counts(reference, prediction, label, axis))


def _label_counts(reference, prediction, label: int, axis: int) -> np.ndarray:
    """``(slices, 3)`` counts of structure ``label`` along ``axis``."""
    a, b = ((np.asarray(m) == label).astype(np.uint8) for m in (reference, prediction))
    return per_slice_counts(a, b, axis, 2)[:, :, 1]


def largest_failing_slice(
    reference: np.ndarray, prediction: np.ndarray, label: int, below: float = 0.5, axis: int = 0
) -> int | None:
    """The largest cross-section of structure ``label`` that the prediction gets badly wrong.

    What a person scrolling through a case sees first (``segeval demo --correct`` corrects
    there): among the reference's slices of the structure, the largest whose Dice is below
    ``below``, else the one of lowest Dice (ties: the first). Unlike :func:`worst_slice` it
    never picks a slice where the structure is only predicted, and prefers a large failure to
    a small one of lower Dice. None when the reference does not hold the structure.

    Parameters
    ----------
    reference, prediction : numpy.ndarray
        Label maps of one shape (a 2D image as one slice, ``(1, H, W)``).
    below : float
        Slice Dice under which a slice counts as badly wrong.

    Returns
    -------
    int or None
    """
    counts = _label_counts(reference, prediction, label, axis)
    area = counts[:, 1]
    held = area > 0
    if not held.any():
        return None
    dice = dice_from_counts(counts[..., None])[:, 0]
    bad = held & (dice < below)
    if bad.any():
        return int(np.argmax(np.where(bad, area, -1)))
    return int(np.argmin(np.where(held, dice, np.inf)))


__all__ = [
    "dice_from_counts",
    "largest_failing_slice",
    "per_slice_counts",
    "per_slice_dice",
    "slice_counts",
    "worst_slice",
    "worst_slice_from_counts",
]
