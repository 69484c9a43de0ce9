"""Masks from probabilities: connectivity, the largest component, merging structures."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import ndimage


def connectivity_structure(ndim: int, connectivity: int | None = None) -> np.ndarray:
    """Neighbourhood for ``connectivity`` neighbours (``None``: face neighbours).

    3D: 6 (faces), 18 (faces and edges) or 26 (full, scikit-image's default);
    2D: 4 or 8; in any dimension, ``3**ndim - 1`` is full connectivity.

    Examples
    --------
    >>> int(connectivity_structure(3, 26).sum()) - 1, int(connectivity_structure(3).sum()) - 1
    (26, 6)
    """
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

    ``connectivity``: number of neighbours (:func:`connectivity_structure`);
    ``None`` (default): face connectivity (6 in 3D). MedSAM2 keeps the largest
    26-connected component (scikit-image's default). ``keep``: voxel indices whose
    components are kept as well (a person's positive clicks).

    Examples
    --------
    >>> m = np.zeros((1, 6, 6), bool); m[0, :2, :2] = True; m[0, 4:, 3:] = True
    >>> int(largest_component(m).sum())
    6
    >>> d = np.zeros((3, 3, 3), bool); d[0, 0, 0] = d[1, 1, 1] = d[2, 2, 2] = True
    >>> int(largest_component(d).sum()), int(largest_component(d, 26).sum())
    (1, 3)
    >>> int(largest_component(m, keep=[(0, 0, 0)]).sum())
    10
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


def structure_masks(
    probabilities: dict[int, np.ndarray],
    *,
    threshold: float = 0.5,
    keep_largest: bool = True,
    connectivity: int | None = None,
) -> dict[int, np.ndarray]:
    """Each structure's boolean mask: above ``threshold``, then its largest component.

    Examples
    --------
    >>> a = np.array([[[0.9, 0.0, 0.7]]], np.float32)
    >>> structure_masks({1: a})[1].tolist(), structure_masks({1: a}, keep_largest=False)[1].tolist()
    ([[[True, False, False]]], [[[True, False, True]]])
    """
    out = {}
    for lab, p in probabilities.items():
        mask = np.asarray(p) > threshold
        out[lab] = largest_component(mask, connectivity) if keep_largest else mask
    return out


def merge_structures(
    probabilities: dict[int, np.ndarray],
    *,
    threshold: float = 0.5,
    keep_largest: bool = True,
    nested_fraction: float | None = 0.5,
    connectivity: int | None = None,
    masks: dict[int, np.ndarray] | None = None,
) -> np.ndarray:
    """One label map from per-structure probabilities; overlaps go to the higher probability.

    Nested structures: when at least ``nested_fraction`` of a structure's mask
    lies inside the mask of a larger structure (a lesion inside its organ), the
    enclosed structure wins their whole overlap, as in reference label maps where
    the lesion label is painted over the organ. ``None`` disables the rule.
    ``connectivity`` is that of :func:`largest_component`; ``masks`` (from
    :func:`structure_masks`) skips recomputing the per-structure masks. Full-size
    arrays; :func:`merge_crops` is the same rule on crops.

    Examples
    --------
    >>> a = np.array([[[0.9, 0.6, 0.0]]], np.float32)
    >>> b = np.array([[[0.0, 0.8, 0.7]]], np.float32)
    >>> merge_structures({1: a, 2: b}, keep_largest=False).tolist()
    [[[1, 2, 2]]]
    >>> organ = np.array([[[0.99, 0.99, 0.99, 0.0]]], np.float32)
    >>> lesion = np.array([[[0.0, 0.7, 0.0, 0.0]]], np.float32)
    >>> merge_structures({1: organ, 5: lesion}).tolist()
    [[[1, 5, 1, 0]]]
    """
    ids = sorted(probabilities)
    if not ids:
        raise ValueError("no structures to merge")
    probs = {lab: np.asarray(probabilities[lab], dtype=np.float32) for lab in ids}
    if masks is None:
        masks = structure_masks(
            probs, threshold=threshold, keep_largest=keep_largest, connectivity=connectivity
        )
    shape = probs[ids[0]].shape
    zero = (0,) * len(shape)
    return merge_crops(
        {lab: (zero, probs[lab], np.asarray(masks[lab], bool)) for lab in ids},
        shape,
        nested_fraction=nested_fraction,
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
    """The label map of :func:`merge_structures` from crops ``label -> (offset, prob, mask)``.

    Each structure's probabilities and own mask are given inside its bounding box
    (``offset`` + arrays of one shape); outside it they are 0 / False. Only one
    full-size float array (the best probability so far) is made, whatever the number
    of structures.

    Examples
    --------
    >>> p = np.full((1, 1, 2), 0.9, np.float32)
    >>> merge_crops({3: ((0, 0, 1), p, p > 0.5)}, (1, 1, 4)).tolist()
    [[[0, 3, 3, 0]]]
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
