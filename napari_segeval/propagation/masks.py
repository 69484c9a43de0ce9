"""Masks from probabilities: connectivity, the largest component, merging structures."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import ndimage


def connectivity_structure(ndim: int, connectivity: int | None = None) -> np.ndarray:
    """Neighbourhood of ``connectivity`` neighbours (``None``: faces; 3D: 6, 18, 26; 2D: 4, 8)."""
    options = {}
    for rank in range(1, ndim + 1):
        st = ndimage.generate_binary_structure(ndim, rank)
        options[int(st.sum()) - 1] = st
    if connectivity is None:
        return options[2 * ndim]
    if int(connectivity) not in options:
        raise ValueError(
            f"connectivity for {ndim}D must be one of {sorted(options)}, got {connectivity!r}"
        )
    return options[int(connectivity)]


def largest_component(
    mask: np.ndarray, connectivity: int | None = None, keep: Sequence[tuple[int, ...]] = ()
) -> np.ndarray:
    """Keep the largest connected component (any dimension).

    ``connectivity``: :func:`connectivity_structure`'s (MedSAM2: 26); ``keep``: voxel indices
    whose components are kept as well (a person's positive clicks).
    """
    lab, n = ndimage.label(mask, structure=connectivity_structure(mask.ndim, connectivity))
    if n <= 1:
        return mask.astype(bool, copy=True)
    sizes = np.bincount(lab.ravel())
    sizes[0] = 0
    inside = [
        tuple(v)
        for v in keep
        if len(v) == lab.ndim and all(0 <= i < d for i, d in zip(v, lab.shape))
    ]
    ids = {int(np.argmax(sizes))} | {int(lab[v]) for v in inside if lab[v]}
    return np.isin(lab, sorted(ids))


def merge_structures(
    probabilities: dict[int, np.ndarray],
    *,
    threshold: float = 0.5,
    keep_largest: bool = True,
    nested_fraction: float | None = 0.5,
    connectivity: int | None = None,
) -> np.ndarray:
    """One label map from per-structure probabilities; overlaps go to the higher probability.

    Each structure's mask is its probability above ``threshold`` (its largest component with
    ``keep_largest``). A structure with at least ``nested_fraction`` of its mask inside a
    larger one's (a lesion inside its organ) wins their whole overlap (``None``: off).

    Examples
    --------
    >>> organ = np.array([[[0.99, 0.99, 0.99, 0.0]]], np.float32)
    >>> lesion = np.array([[[0.0, 0.7, 0.0, 0.0]]], np.float32)
    >>> merge_structures({1: organ, 5: lesion}).tolist()
    [[[1, 5, 1, 0]]]
    """
    ids = sorted(probabilities)
    if not ids:
        raise ValueError("no structures to merge")
    probs = {lab: np.asarray(probabilities[lab], dtype=np.float32) for lab in ids}
    masks = {lab: p > threshold for lab, p in probs.items()}
    if keep_largest:
        masks = {lab: largest_component(m, connectivity) for lab, m in masks.items()}
    shape = probs[ids[0]].shape
    zero = (0,) * len(shape)
    return merge_crops(
        {lab: (zero, probs[lab], masks[lab]) for lab in ids}, shape, nested_fraction=nested_fraction
    )


def _overlap(a: tuple, b: tuple) -> int:
    """Voxels where two ``(offset, mask)`` crops are both True."""
    (oa, ma), (ob, mb) = a, b
    lo = [max(x, y) for x, y in zip(oa, ob)]
    hi = [min(x + s, y + t) for x, s, y, t in zip(oa, ma.shape, ob, mb.shape)]
    if any(h <= low for low, h in zip(lo, hi)):
        return 0
    sa = tuple(slice(low - o, h - o) for low, h, o in zip(lo, hi, oa))
    sb = tuple(slice(low - o, h - o) for low, h, o in zip(lo, hi, ob))
    return int((ma[sa] & mb[sb]).sum())


def merge_crops(
    crops: dict[int, tuple], shape: tuple, *, nested_fraction: float | None = 0.5
) -> np.ndarray:
    """The label map of :func:`merge_structures` from crops ``label -> (offset, prob, mask)``
    (0 / False outside each), with one full-size float array whatever the number of structures.
    """
    ids = sorted(crops)
    if not ids:
        raise ValueError("no structures to merge")
    size = {lab: int(crops[lab][2].sum()) for lab in ids}
    outers: dict[int, list[int]] = {lab: [] for lab in ids}  # lab -> structures enclosing it
    if nested_fraction is not None:
        for inner in ids:
            for outer in ids:
                if (
                    outer != inner
                    and 0 < size[inner] < size[outer]
                    and _overlap(crops[inner][::2], crops[outer][::2])
                    >= nested_fraction * size[inner]
                ):
                    outers[inner].append(outer)
    best = np.zeros(shape, np.float32)
    out = np.zeros(shape, np.uint16 if max(ids) > 255 else np.uint8)
    for lab in sorted(ids, key=lambda i: (-size[i], i)):  # enclosing structures first
        offset, prob, mask = crops[lab]
        where = tuple(slice(o, o + s) for o, s in zip(offset, mask.shape))
        prob = np.asarray(prob, np.float32)
        best_here, out_here = best[where], out[where]
        win = mask & (prob > best_here)
        if outers[lab]:
            win |= mask & np.isin(out_here, outers[lab])
        out_here[win] = lab
        best_here[win] = prob[win]
    return out
