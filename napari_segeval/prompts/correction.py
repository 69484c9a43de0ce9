"""The simulated correction of an interactive evaluation: where a person would click next.

A pure function of the prediction and the reference (a round is reproducible); the rule
is in docs/protocols.md, "interactive".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import Point

#: What ``kind`` may be.
KINDS = ("point", "box")


@dataclass(frozen=True)
class Correction:
    """One simulated correction: the prompt, and what the rule saw on its slice.

    Attributes
    ----------
    prompt
        The prompt to add (its ``index`` is the slice, its ``label`` the structure).
    n_fn, n_fp
        False-negative and false-positive pixels on that slice before the prompt.
    region
        ``"fn"`` or ``"fp"``: which of the two the rule corrects.
    depth
        The distance transform at the clicked pixel; 0 for a box.
    """

    prompt: Point | Box
    n_fn: int
    n_fp: int
    region: str
    depth: float = 0.0

    @property
    def index(self) -> int:
        """The corrected slice/frame."""
        return int(self.prompt.index)


def slice_errors(reference: np.ndarray, prediction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False negatives and false positives per slice (first axis) of two boolean stacks."""
    ref, pred = np.asarray(reference, bool), np.asarray(prediction, bool)
    if ref.shape != pred.shape or ref.ndim != 3:
        raise ValueError(
            f"expected two (n, H, W) masks of one shape, got {ref.shape} and {pred.shape}"
        )
    fn, fp = error_regions(ref, pred)
    return fn.reshape(len(fn), -1).sum(axis=1), fp.reshape(len(fp), -1).sum(axis=1)


def most_wrong_slice(
    reference: np.ndarray, prediction: np.ndarray, allowed: np.ndarray | None = None
) -> int | None:
    """The slice with the most wrong voxels (FN + FP; ties: the lowest) among ``allowed``
    (boolean per slice), or None; :func:`napari_segeval.metrics.worst_slice` ranks by Dice.
    """
    fn, fp = slice_errors(reference, prediction)
    wrong = (fn + fp).astype(np.int64)
    if allowed is not None:
        wrong = np.where(np.asarray(allowed, bool), wrong, 0)
    return int(np.argmax(wrong)) if wrong.any() else None  # argmax: the first maximum


def error_regions(reference: np.ndarray, prediction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False-negative and false-positive masks (any shape; one slice for a correction)."""
    ref, pred = np.asarray(reference, bool), np.asarray(prediction, bool)
    return ref & ~pred, pred & ~ref


def corrects_misses(n_fn: int, n_fp: int) -> bool:
    """Whether a correction fixes the false negatives: when there are at least as many as FPs."""
    return int(n_fn) >= int(n_fp)


def interior_pixel(mask: np.ndarray) -> tuple[int, int, float]:
    """``(y, x, depth)``: the pixel of a non-empty 2D mask farthest from its outside (the
    border counts as outside; ties: the first in row-major order)."""
    from scipy import ndimage

    m = np.asarray(mask, bool)
    if m.ndim != 2 or not m.any():
        raise ValueError(f"expected a non-empty 2D mask, got shape {m.shape}")
    dist = ndimage.distance_transform_edt(np.pad(m, 1))[1:-1, 1:-1]
    y, x = divmod(int(np.argmax(dist)), m.shape[1])  # first maximum in C order
    return y, x, float(dist[y, x])


def _point(ref: np.ndarray, pred: np.ndarray, z: int, label: int, fn: int, fp: int) -> Correction:
    positive = corrects_misses(fn, fp)
    missed, leaked = error_regions(ref[z], pred[z])
    y, x, depth = interior_pixel(missed if positive else leaked)
    point = Point(y, x, index=z, label=label, positive=positive)
    return Correction(point, fn, fp, "fn" if positive else "fp", depth)


def next_correction(
    reference: np.ndarray,
    prediction: np.ndarray,
    *,
    label: int = 1,
    kind: str = "point",
    boxed: Iterable[int] = (),
    points: bool = True,
    index: int | None = None,
) -> Correction | None:
    """The prompt a person adds next to one structure, or None if it is exact.

    Parameters
    ----------
    reference, prediction
        Boolean ``(n, H, W)`` masks of the structure (a 2D image as ``(1, H, W)``).
    label
        The structure id the prompt is for.
    kind
        ``"point"`` at the worst region's interior, or ``"box"``: the reference's box on the
        worst slice that has reference and no box yet (else the point).
    boxed
        Slices that already carry a box of this structure (``kind="box"``).
    points
        Whether the model takes points; ``False``: None where ``kind="box"`` finds no slice.
    index
        Correct this slice instead of the worst one (``segeval demo --correct``); None
        when it has no error.

    Raises
    ------
    ValueError
        Masks of different shapes, or an unknown ``kind``.

    Examples
    --------
    >>> ref = np.zeros((2, 6, 6), bool); ref[0, 1:5, 1:5] = True
    >>> pred = np.zeros_like(ref); pred[1, 0:3, 0:6] = True   # 18 FP on slice 1, 16 FN on 0
    >>> next_correction(ref, pred, kind="box", boxed=[0], points=False) is None
    True
    >>> next_correction(ref, pred, index=0).prompt           # the slice asked for
    Point(y=2.0, x=2.0, index=0, label=1, positive=True)
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    ref, pred = np.asarray(reference, bool), np.asarray(prediction, bool)
    fn, fp = slice_errors(ref, pred)
    only = np.ones(ref.shape[0], bool)
    if index is not None:
        if not 0 <= int(index) < ref.shape[0]:
            raise ValueError(f"index {index} outside the {ref.shape[0]} slices")
        only = np.arange(ref.shape[0]) == int(index)
    z = most_wrong_slice(ref, pred, only)
    if z is None:
        return None
    if kind == "box":
        allowed = ref.reshape(ref.shape[0], -1).any(axis=1) & only
        allowed[[int(i) for i in boxed if 0 <= int(i) < ref.shape[0]]] = False
        zb = most_wrong_slice(ref, pred, allowed)
        if zb is not None:
            box = Box.from_mask(ref[zb], index=zb, label=label)
            region = "fn" if corrects_misses(fn[zb], fp[zb]) else "fp"
            return Correction(box, int(fn[zb]), int(fp[zb]), region)
        if not points:
            return None
    return _point(ref, pred, z, int(label), int(fn[z]), int(fp[z]))
