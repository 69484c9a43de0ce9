"""Running walks (one structure, one direction) through a backend, and combining them.

The pieces of :func:`~napari_segeval.propagation.core.propagate_case` that talk to the
backend: which calibrated confidence stop applies, where a walk stops (never before its
last conditioning frame), and how the forward and backward walks of a structure become
one probability crop (:func:`structure_crop`: the bounding box of what the walks
computed, never a full-size volume per structure).
"""

from __future__ import annotations

from typing import Any

from napari_segeval.models.base import PromptableModel
from napari_segeval.models.walk import Walk, WalkOutput


def resolve_min_confidence(
    model: PromptableModel, min_confidence: float | str | None
) -> float | None:
    """``"auto"`` -> the stop ``model`` declares (``capabilities.stop_confidence``, None
    for none); else the value.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> resolve_min_confidence(ThresholdPromptModel(), "auto") is None
    True
    >>> resolve_min_confidence(ThresholdPromptModel(), 0.7)
    0.7
    """
    if isinstance(min_confidence, str):
        if min_confidence != "auto":
            raise ValueError(
                f"min_confidence must be a number, None or 'auto', got {min_confidence!r}"
            )
        value = model.capabilities.stop_confidence
        return None if value is None else float(value)
    return None if min_confidence is None else float(min_confidence)


def confidence_stop(
    probs: Any, min_confidence: float | None, threshold: float = 0.5, first: int = 0
) -> int:
    """Number of leading frames of one direction to keep (see the module doc).

    ``probs`` is ``(m, H, W)`` with the start frame first. Frames without
    foreground do not stop the walk (``stop_when_empty`` handles them), nor do the
    first ``first + 1`` frames (a walk never stops before its last conditioning
    frame, at visit position ``first``).

    Examples
    --------
    >>> import torch
    >>> p = torch.zeros(4, 2, 2); p[0, 0, 0] = 0.95; p[1, 0, 0] = 0.9; p[2, 0, 0] = 0.6
    >>> confidence_stop(p, 0.75), confidence_stop(p, None), confidence_stop(p, 0.75, first=2)
    (2, 4, 4)
    """
    m = int(probs.shape[0])
    if min_confidence is None or m <= 1:
        return m
    p = probs.detach().float()
    fg = p > threshold
    count = fg.flatten(1).sum(dim=1)
    mean = (p * fg).flatten(1).sum(dim=1) / count.clamp(min=1)
    return _first_low(count.tolist(), mean.tolist(), min_confidence, first, m)


def _first_low(counts: list, means: list, min_confidence: float, first: int, m: int) -> int:
    for j in range(max(1, int(first) + 1), m):
        if counts[j] > 0 and means[j] < float(min_confidence):
            return j
    return m


def output_stop(
    out: WalkOutput,
    min_confidence: float | None,
    threshold: float = 0.5,
    first: int = 0,
    logits: bool = False,
) -> int:
    """:func:`confidence_stop` of a cropped walk (``logits``: of its sigmoid at 0.5)."""
    import torch

    m = len(out)
    if min_confidence is None or m <= 1:
        return m
    counts, means = [], []
    for v in out.values:
        if v is None:
            counts.append(0)
            means.append(0.0)
            continue
        p = torch.sigmoid(v.detach().float()) if logits else v.detach().float()
        fg = p > (0.5 if logits else threshold)
        count = fg.sum()
        counts.append(int(count))
        means.append(float((p * fg).sum() / count.clamp(min=1)))
    return _first_low(counts, means, min_confidence, first, m)


def structure_crop(
    parts: list[tuple[Walk, WalkOutput]],
    min_confidence: float | None,
    threshold: float = 0.5,
    logits: bool = False,
) -> tuple[tuple[int, int, int], Any]:
    """One structure's ``(offset, crop)`` from its walks (confidence stop, then union).

    Each walk is cut at its confidence stop (never before its last conditioning
    frame); a frame reached by two walks (a forward and a backward walk, on and
    between the conditioning frames) takes their maximum. The crop is the bounding
    box of every frame's values; outside it the structure is 0 (``-inf`` for logits).
    Differentiable.

    Examples
    --------
    >>> import torch
    >>> from napari_segeval.prompts.box import Box
    >>> box = Box(0, 0, 1, 1, index=1)
    >>> fwd = WalkOutput([1, 2], [(0, 0, 1, 1), None], [torch.full((1, 1), 0.9), None], (2, 2))
    >>> bwd = WalkOutput([1, 0], [(1, 1, 2, 2)] * 2, [torch.full((1, 1), 0.8)] * 2, (2, 2))
    >>> offset, crop = structure_crop([(Walk(1, box, "forward"), fwd),
    ...                                (Walk(1, box, "backward"), bwd)], None)
    >>> offset, tuple(crop.shape), crop[1].tolist()
    ((0, 0, 0), (2, 2, 2), [[0.8999999761581421, 0.0], [0.0, 0.800000011920929]])
    """
    import torch
    import torch.nn.functional as F

    fill = float("-inf") if logits else 0.0
    pieces: dict[int, list] = {}
    for walk, out in parts:
        keep = output_stop(out, min_confidence, threshold, walk.last_conditioning_step(), logits)
        for j in range(keep):
            if out.boxes[j] is not None:
                pieces.setdefault(int(out.frames[j]), []).append((out.boxes[j], out.values[j]))
    if not pieces:
        return (0, 0, 0), torch.zeros((0, 0, 0))
    boxes = [b for ps in pieces.values() for b, _ in ps]
    y0, x0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
    y1, x1 = max(b[2] for b in boxes), max(b[3] for b in boxes)
    z0, z1 = min(pieces), max(pieces) + 1
    ref = next(iter(pieces.values()))[0][1]
    rows = []
    for f in range(z0, z1):
        row = None
        for (a, b, c, d), v in pieces.get(f, ()):
            v = F.pad(v, (b - x0, x1 - d, a - y0, y1 - c), value=fill)
            row = v if row is None else torch.maximum(row, v)
        rows.append(
            row
            if row is not None
            else torch.full((y1 - y0, x1 - x0), fill, dtype=ref.dtype, device=ref.device)
        )
    return (z0, y0, x0), torch.stack(rows)
