"""Overlap metrics of all structures from one confusion matrix.

Dice is ``2|A∩B| / (|A| + |B|)``. Some published recipes (MedSAM2's, a 2D
cross-validation benchmark's) divide ``2|A∩B|`` by ``|A∪B|``; that is not Dice (it can
exceed 1) and is not what this module computes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from napari_segeval._errors import GeometryMismatchError, InvalidLabelsError

EMPTY_CHOICES = ("one", "nan", "zero")
MAX_LABELS = 4096
_SLAB_VOXELS = 1 << 21


def as_labels(a: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == bool:
        return a.view(np.uint8)
    if not np.issubdtype(a.dtype, np.integer):
        raise InvalidLabelsError(f"{name} label map has non-integer dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.signedinteger) and a.size and a.min() < 0:
        raise InvalidLabelsError(f"{name} label map has negative label ids")
    return a


def _count_slab(ref: np.ndarray, pred: np.ndarray, n: int) -> np.ndarray:
    """Counts of (ref, pred) pairs in one slab, background-background excluded.

    The pair index ``r * n + p`` is formed in the narrowest unsigned type holding
    ``n * n``; only the non-zero ones are compressed out and counted.
    """
    dtype = np.uint16 if n * n <= 1 << 16 else np.uint32
    combined = ref.reshape(-1).astype(dtype)
    np.multiply(combined, n, out=combined, casting="unsafe")
    np.add(combined, pred.reshape(-1), out=combined, casting="unsafe")
    return np.bincount(combined[combined.astype(bool)], minlength=n * n)


def label_pair(
    reference: np.ndarray, prediction: np.ndarray, n_labels: int | None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate two label maps of one shape; return them and the number of labels."""
    ref = as_labels(reference, "reference")
    pred = as_labels(prediction, "prediction")
    if ref.shape != pred.shape:
        raise GeometryMismatchError(
            f"reference {ref.shape} and prediction {pred.shape} label maps differ in shape"
        )
    top = max(int(ref.max(initial=0)), int(pred.max(initial=0)))
    n = top + 1 if n_labels is None else int(n_labels)
    if top >= n:
        raise InvalidLabelsError(f"label {top} does not fit n_labels={n}")
    if n > MAX_LABELS:
        raise InvalidLabelsError(f"{n} labels is more than the supported {MAX_LABELS}")
    return ref, pred, n


def confusion_matrix(
    reference: np.ndarray, prediction: np.ndarray, n_labels: int | None = None
) -> np.ndarray:
    """Count voxels of every (reference label, predicted label) pair in one pass.

    Parameters
    ----------
    reference, prediction : numpy.ndarray
        Integer (or bool) label maps of one shape, any dimension (2D, 3D, 2D+t).
    n_labels : int, optional
        Number of rows/columns; default ``max label + 1`` over both maps.

    Returns
    -------
    numpy.ndarray
        int64 matrix ``cm[r, p]`` = voxels with reference label ``r`` and
        predicted label ``p``.

    Raises
    ------
    GeometryMismatchError
        The shapes differ.
    InvalidLabelsError
        Non-integer or negative labels, a label >= ``n_labels``, or more than 4096 labels.
    """
    return confusion_and_boxes(reference, prediction, n_labels, boxes=False)[0]


def confusion_and_boxes(
    reference: np.ndarray, prediction: np.ndarray, n_labels: int | None = None, boxes: bool = True
) -> tuple[np.ndarray, dict[int, tuple[slice, ...]]]:
    """:func:`confusion_matrix` and ``{label: slices}``, each label's box in either map.

    The boxes come from :func:`scipy.ndimage.find_objects` of each slab while it is
    counted, so the volume is read once. Labels absent from both maps and 0 have none.
    """
    ref, pred, n = label_pair(reference, prediction, n_labels)
    if ref.ndim == 0 or ref.size == 0:
        return np.zeros((n, n), np.int64), {}
    if not (ref.flags.c_contiguous and pred.flags.c_contiguous):
        ref, pred = np.ascontiguousarray(ref), np.ascontiguousarray(pred)
    per = max(int(np.prod(ref.shape[1:])), 1)
    step = ref.shape[0] if n * n > 65536 else max(1, _SLAB_VOXELS // per)  # large n: one slab
    starts = range(0, ref.shape[0], step)

    def work(z: int) -> tuple[np.ndarray, list]:
        a, b = ref[z : z + step], pred[z : z + step]
        found = [_slab_objects(a, n, z), _slab_objects(b, n, z)] if boxes else []
        return _count_slab(a, b, n), found

    parts = map_threads(work, starts)
    counts = np.sum([p[0] for p in parts], axis=0)
    cm = counts.reshape(n, n).astype(np.int64, copy=False)
    cm[0, 0] = ref.size - (cm.sum() - cm[0, 0])
    return cm, (_union_boxes([f for p in parts for f in p[1]], ref.ndim) if boxes else {})


def _slab_objects(slab: np.ndarray, n: int, z: int) -> list:
    """``find_objects`` of one slab with its first axis shifted to the volume's (``z``)."""
    from scipy import ndimage

    found = ndimage.find_objects(slab, max_label=n - 1)
    return [sl and (slice(sl[0].start + z, sl[0].stop + z), *sl[1:]) for sl in found]


def _union_boxes(found: list[list], ndim: int) -> dict[int, tuple[slice, ...]]:
    """Per label (``found[i][label - 1]``), the smallest box holding every slab's box."""
    out = {}
    for label, parts in enumerate(zip(*found), start=1):
        boxes = [b for b in parts if b is not None]  # None: the slab does not hold the label
        if boxes:
            out[label] = tuple(
                slice(min(b[a].start for b in boxes), max(b[a].stop for b in boxes))
                for a in range(ndim)
            )
    return out


def map_threads(work, items: Sequence) -> list:
    """``[work(i) for i in items]``, in up to 8 threads (the CPUs this process may use)."""
    if len(items) < 2:
        return [work(i) for i in items]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2
    with ThreadPoolExecutor(max_workers=max(1, min(8, cpus))) as pool:
        return list(pool.map(work, items))


def labels_to_report(
    reference: np.ndarray, prediction: np.ndarray, labels: Iterable[int] | None
) -> tuple[list[int] | None, int | None]:
    """``labels`` sorted and the ``n_labels`` that holds them and both maps (None, None: all)."""
    if labels is None:
        return None, None
    wanted = sorted({int(v) for v in labels})
    if not wanted:
        return wanted, None
    top = max(int(np.max(reference, initial=0)), int(np.max(prediction, initial=0)))
    return wanted, max(top, wanted[-1]) + 1


def empty_value(empty: str) -> float:
    if empty not in EMPTY_CHOICES:
        raise ValueError(f"empty must be one of {EMPTY_CHOICES}, got {empty!r}")
    return {"one": 1.0, "nan": np.nan, "zero": 0.0}[empty]


def _ratio(num: np.ndarray, den: np.ndarray, both_empty: np.ndarray, fill: float) -> np.ndarray:
    out = np.divide(num, den, out=np.zeros(np.shape(num), float), where=den > 0)
    out[both_empty] = fill
    return out


def overlap_from_counts(
    tp: np.ndarray | int,
    ref_n: np.ndarray | int,
    pred_n: np.ndarray | int,
    total: np.ndarray | int | None = None,
    *,
    empty: str = "one",
) -> dict[str, np.ndarray]:
    """Dice, IoU, precision and recall from voxel counts: the one definition.

    Every overlap number of the package (whole maps, per slice, live while
    painting) comes from here.

    Parameters
    ----------
    tp, ref_n, pred_n : int or array of int
        True positives, reference voxels and predicted voxels of a structure
        (arrays of one shape: one element per structure, slice, ...).
    total : int or array of int, optional
        Voxels in the region; with it, specificity and volume similarity are
        added.
    empty : {"one", "nan", "zero"}
        Value of every ratio when the structure is absent from both maps (1.0 as
        MSD/MedSAM2, NaN so that means skip it as nnU-Net, or 0.0). A ratio whose
        own denominator is zero otherwise (precision with nothing predicted,
        recall with an empty reference) is 0.

    Returns
    -------
    dict of str to numpy.ndarray
        ``dice`` = 2 tp / (ref + pred), ``iou`` = tp / (ref + pred - tp),
        ``precision`` = tp / pred, ``recall`` = tp / ref; with ``total`` also
        ``specificity`` = tn / (tn + fp) and ``volume_similarity`` =
        1 - |ref - pred| / (ref + pred). float64 arrays of the counts' shape.
    """
    fill = empty_value(empty)
    tp, ref_n, pred_n = (np.asarray(v, np.int64) for v in (tp, ref_n, pred_n))
    none = (ref_n == 0) & (pred_n == 0)
    both = (ref_n + pred_n).astype(float)
    tpf = tp.astype(float)
    out = {
        "dice": _ratio(2.0 * tp, both, none, fill),
        "iou": _ratio(tpf, (ref_n + pred_n - tp).astype(float), none, fill),
        "precision": _ratio(tpf, pred_n.astype(float), none, fill),
        "recall": _ratio(tpf, ref_n.astype(float), none, fill),
    }
    if total is not None:
        fp = pred_n - tp
        tn = np.asarray(total, np.int64) - ref_n - fp
        out["specificity"] = _ratio(tn.astype(float), (tn + fp).astype(float), tn + fp == 0, fill)
        out["volume_similarity"] = _ratio(
            (ref_n + pred_n - np.abs(ref_n - pred_n)).astype(float), both, none, fill
        )
    return out


def overlap_from_confusion(
    cm: np.ndarray,
    spacing: Sequence[float] | None = None,
    *,
    empty: str = "one",
    include_background: bool = False,
) -> dict[str, np.ndarray]:
    """Per-label overlap metrics from a confusion matrix.

    Parameters
    ----------
    cm : numpy.ndarray
        Square count matrix, rows reference labels, columns predicted labels.
    spacing : sequence of float, optional
        Voxel spacing in mm (volumes in ml use its product; default 1 mm^3).
    empty : {"one", "nan", "zero"}
        Value of Dice, IoU, precision, recall and volume similarity when a label
        is absent from both maps (see :func:`overlap_from_counts`).
    include_background : bool
        Keep label 0 as a structure (one published protocol averages over all
        classes including background); otherwise its entries are NaN.

    Returns
    -------
    dict of str to numpy.ndarray
        ``dice, iou, precision, recall, specificity, volume_similarity,
        volume_ref_ml, volume_pred_ml, tp, fp, fn, tn``, each indexed by label id.
    """
    cm = np.asarray(cm, dtype=np.int64)
    total = int(cm.sum())
    tp, ref_n, pred_n = np.diag(cm).copy(), cm.sum(axis=1), cm.sum(axis=0)
    fp, fn = pred_n - tp, ref_n - tp
    out = overlap_from_counts(tp, ref_n, pred_n, total, empty=empty)
    voxel_ml = float(np.prod(spacing)) / 1000.0 if spacing is not None else 0.001
    out.update(
        volume_ref_ml=ref_n * voxel_ml,
        volume_pred_ml=pred_n * voxel_ml,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=total - tp - fp - fn,
    )
    if not include_background and cm.shape[0]:
        for key in ("dice", "iou", "precision", "recall", "specificity", "volume_similarity"):
            out[key][0] = np.nan
    return out


def overlap_metrics(
    reference: np.ndarray,
    prediction: np.ndarray,
    spacing: Sequence[float] | None = None,
    *,
    labels: Iterable[int] | None = None,
    empty: str = "one",
    include_background: bool = False,
) -> dict[int, dict[str, float]]:
    """Overlap metrics of every structure of two label maps.

    Parameters
    ----------
    reference, prediction : numpy.ndarray
        Integer label maps of one shape (2D, 3D or 2D+t).
    spacing : sequence of float, optional
        Voxel spacing in mm, for volumes in ml.
    labels : iterable of int, optional
        Labels to report; default every label present in either map (label 0 only
        with ``include_background``).
    empty, include_background
        See :func:`overlap_from_confusion`.

    Returns
    -------
    dict
        ``{label: {metric: value}}`` with the keys of :func:`overlap_from_confusion`.
    """
    wanted, n = labels_to_report(reference, prediction, labels)
    cm = confusion_matrix(reference, prediction, n)
    m = overlap_from_confusion(cm, spacing, empty=empty, include_background=include_background)
    if wanted is None:
        present = np.flatnonzero((cm.sum(axis=0) + cm.sum(axis=1)) > 0)
        wanted = [int(v) for v in present if v != 0 or include_background]
    return {lab: {k: v[lab].item() for k, v in m.items()} for lab in wanted}  # int or float


def mask_dice(a: np.ndarray, b: np.ndarray) -> float:
    """Dice of two boolean masks of one shape, 1.0 when both are empty."""
    tp = int(np.logical_and(a, b).sum())
    return float(overlap_from_counts(tp, int(a.sum()), int(b.sum()))["dice"])


__all__ = [
    "confusion_and_boxes",
    "confusion_matrix",
    "mask_dice",
    "overlap_from_confusion",
    "overlap_from_counts",
    "overlap_metrics",
]
