"""Box prompts derived from reference labels (the MedSAM2 evaluation recipe).

* Volumes: the key slice is the middle of the structure's extent along the
  slice axis (``(first + last) // 2`` of the slices where it is present; if
  that slice happens to be empty - a structure split in two - the nearest
  non-empty slice); the box is that slice's mask bounding box.
* Videos: the first frame where the structure appears.
* Corrections (:func:`correction_prompt`): a click deep inside the larger error of a
  slice, or the reference's box there.

Optional jitter shifts each box edge by up to ``jitter`` pixels, drawn from
``np.random.default_rng(seed)`` so runs are reproducible.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from napari_segeval._errors import InvalidLabelsError
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import Point


def key_index(mask: np.ndarray, mode: str = "volume") -> int:
    """Key slice/frame of a boolean ``(n, H, W)`` mask.

    Examples
    --------
    >>> m = np.zeros((10, 4, 4), bool); m[2:7, 1, 1] = True
    >>> key_index(m), key_index(m, "video")
    (4, 2)
    """
    present = np.nonzero(np.asarray(mask).reshape(mask.shape[0], -1).any(axis=1))[0]
    if present.size == 0:
        raise InvalidLabelsError("structure is absent from the reference: no prompt")
    if mode == "video":
        return int(present[0])
    if mode != "volume":
        raise ValueError(f"mode must be 'volume' or 'video', got {mode!r}")
    mid = (int(present[0]) + int(present[-1])) // 2
    return int(present[np.argmin(np.abs(present - mid))])


def box_from_labels(labels: np.ndarray, label: int, *, mode: str = "volume", jitter: int = 0,
                    rng: np.random.Generator | None = None) -> Box:
    """Box prompt for one structure of a ``(n, H, W)`` (or ``(H, W)``) label map.

    Parameters
    ----------
    labels : numpy.ndarray
        Integer reference labels, slice/frame axis first.
    label : int
        Structure id.
    mode : {"volume", "video"}
        Middle of the extent (volume) or first frame present (video).
    jitter : int
        Maximum shift of each box edge in pixels (0: tight box).
    rng : numpy.random.Generator, optional
        Source of the jitter (default ``np.random.default_rng(0)``).

    Examples
    --------
    >>> lab = np.zeros((5, 8, 8), np.uint8); lab[1:4, 2:5, 3:7] = 2
    >>> box_from_labels(lab, 2)
    Box(y0=2, x0=3, y1=5, x1=7, index=2, label=2)
    """
    arr = np.asarray(labels)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        raise InvalidLabelsError(f"expected (n, H, W) labels, got shape {np.shape(labels)}")
    mask = arr == label
    try:
        k = key_index(mask, mode)
    except InvalidLabelsError:
        raise InvalidLabelsError(f"structure {label} is absent from the reference labels") from None
    box = Box.from_mask(mask[k], index=k, label=label)
    if jitter > 0:
        box = box.jittered(jitter, rng if rng is not None else np.random.default_rng(0),
                           arr.shape[1:])
    return box


def boxes_from_labels(labels: np.ndarray, structures: Iterable[int] | None = None, *,
                      mode: str = "volume", jitter: int = 0, seed: int = 0) -> list[Box]:
    """Boxes for several structures (default: every non-zero label present).

    One generator seeded with ``seed`` draws the jitter of all boxes in order.

    Examples
    --------
    >>> lab = np.zeros((4, 6, 6), np.uint8); lab[0:2, :2, :2] = 1; lab[2:4, 3:, 3:] = 3
    >>> [(b.label, b.index) for b in boxes_from_labels(lab)]
    [(1, 0), (3, 2)]
    """
    arr = np.asarray(labels)
    ids = [int(v) for v in np.unique(arr) if v != 0] if structures is None else list(structures)
    rng = np.random.default_rng(seed)
    return [box_from_labels(arr, lab, mode=mode, jitter=jitter, rng=rng) for lab in ids]


def correction_prompt(reference: np.ndarray, prediction: np.ndarray, label: int, index: int,
                      *, points: bool = True) -> Box | Point | None:
    """The prompt a person adds on slice/frame ``index`` to correct structure ``label``.

    With ``points``: one click at the pixel deepest inside the larger error of the slice
    (the largest distance to its edge) - positive where the prediction missed the
    structure, negative where it found it wrongly. Without: the reference's box on that
    slice. None when there is nothing to correct there (no error; no reference for a
    box). Deterministic (the first pixel wins ties), for demos and simulated rounds.

    Examples
    --------
    >>> ref = np.zeros((1, 9, 9), np.uint8); ref[0, 1:8, 1:8] = 1
    >>> pred = np.zeros_like(ref); pred[0, 1:8, 1:3] = 1
    >>> correction_prompt(ref, pred, 1, 0)
    Point(y=3.0, x=5.0, index=0, label=1, positive=True)
    >>> correction_prompt(ref, pred, 1, 0, points=False)
    Box(y0=1, x0=1, y1=8, x1=8, index=0, label=1)
    >>> correction_prompt(ref, ref, 1, 0) is None
    True
    """
    from scipy import ndimage

    ref = np.asarray(reference)
    ref = ref[None] if ref.ndim == 2 else ref
    pred = np.asarray(prediction)
    pred = pred[None] if pred.ndim == 2 else pred
    truth, found = ref[index] == label, pred[index] == label
    if not points:
        return Box.from_mask(truth, index=index, label=label) if truth.any() else None
    missed, wrong = truth & ~found, found & ~truth
    error, positive = (missed, True) if missed.sum() >= wrong.sum() else (wrong, False)
    if not error.any():
        return None
    depth = ndimage.distance_transform_edt(np.pad(error, 1))[1:-1, 1:-1]
    y, x = np.unravel_index(int(np.argmax(depth)), depth.shape)
    return Point(int(y), int(x), index=index, label=label, positive=positive)
