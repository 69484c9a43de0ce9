"""Box prompts from reference labels (the MedSAM2 evaluation recipe).

Volumes: the middle slice of the structure's extent (``(first + last) // 2``; if empty,
the nearest non-empty slice); videos: the first frame where it appears. Jitter is drawn
from ``np.random.default_rng(seed)``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from napari_segeval._errors import InvalidLabelsError
from napari_segeval.prompts.box import Box


def key_index(mask: np.ndarray, mode: str = "volume") -> int:
    """Key slice/frame of a boolean ``(n, H, W)`` mask."""
    present = np.nonzero(np.asarray(mask).reshape(mask.shape[0], -1).any(axis=1))[0]
    if present.size == 0:
        raise InvalidLabelsError("structure is absent from the reference: no prompt")
    if mode == "video":
        return int(present[0])
    if mode != "volume":
        raise ValueError(f"mode must be 'volume' or 'video', got {mode!r}")
    mid = (int(present[0]) + int(present[-1])) // 2
    return int(present[np.argmin(np.abs(present - mid))])


def box_from_labels(
    labels: np.ndarray,
    label: int,
    *,
    mode: str = "volume",
    jitter: int = 0,
    rng: np.random.Generator | None = None,
) -> Box:
    """Box prompt for one structure of a ``(n, H, W)`` (or ``(H, W)``) label map.

    Parameters
    ----------
    labels
        Integer reference labels, slice/frame axis first.
    label
        Structure id.
    mode
        ``"volume"``: middle of the extent; ``"video"``: first frame present.
    jitter
        Maximum shift of each box edge in pixels (0: tight box).
    rng
        Source of the jitter (default ``np.random.default_rng(0)``).
    """
    arr = np.asarray(labels)
    arr = arr[None] if arr.ndim == 2 else arr
    if arr.ndim != 3:
        raise InvalidLabelsError(f"expected (n, H, W) labels, got shape {np.shape(labels)}")
    mask = arr == label
    try:
        k = key_index(mask, mode)
    except InvalidLabelsError:
        raise InvalidLabelsError(f"structure {label} is absent from the reference labels") from None
    box = Box.from_mask(mask[k], index=k, label=label)
    if jitter > 0:
        box = box.jittered(
            jitter, rng if rng is not None else np.random.default_rng(0), arr.shape[1:]
        )
    return box


def boxes_from_labels(
    labels: np.ndarray,
    structures: Iterable[int] | None = None,
    *,
    mode: str = "volume",
    jitter: int = 0,
    seed: int = 0,
) -> list[Box]:
    """Boxes for several structures (default: every non-zero label present).

    One generator seeded with ``seed`` draws the jitter of all boxes in order.
    """
    arr = np.asarray(labels)
    ids = [int(v) for v in np.unique(arr) if v != 0] if structures is None else list(structures)
    rng = np.random.default_rng(seed)
    return [box_from_labels(arr, lab, mode=mode, jitter=jitter, rng=rng) for lab in ids]
