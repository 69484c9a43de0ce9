"""The walks' confidence stop and the union of a structure's walks into one crop."""

from __future__ import annotations

from typing import Any

from napari_segeval.models.base import PromptableModel
from napari_segeval.models.walk import Walk, WalkOutput


def resolve_min_confidence(
    model: PromptableModel, min_confidence: float | str | None
) -> float | None:
    """``"auto"`` -> the stop ``model`` declares (``capabilities.stop_confidence``); else the value."""
    if min_confidence == "auto":
        value = model.capabilities.stop_confidence
        return None if value is None else float(value)
    return None if min_confidence is None else float(min_confidence)


def confidence_stop(
    values: Any,
    min_confidence: float | None,
    threshold: float = 0.5,
    first: int = 0,
    logits: bool = False,
) -> int:
    """Number of leading frames of one walk to keep (``values``: ``(m, H, W)`` or a cropped
    walk's list, None where empty; start frame first): the first position after ``first`` (the
    last conditioning frame) with foreground whose mean is below ``min_confidence``, else ``m``.
    ``logits``: of their sigmoid at 0.5.
    """
    import torch

    values = list(values)
    m = len(values)
    if min_confidence is None or m <= 1:
        return m
    for j in range(max(1, int(first) + 1), m):
        if values[j] is None:
            continue
        p = torch.sigmoid(values[j].detach().float()) if logits else values[j].detach().float()
        fg = p > (0.5 if logits else threshold)
        count = fg.sum()
        if int(count) > 0 and float((p * fg).sum() / count.clamp(min=1)) < float(min_confidence):
            return j
    return m


def structure_crop(
    parts: list[tuple[Walk, WalkOutput]],
    min_confidence: float | None,
    threshold: float = 0.5,
    logits: bool = False,
) -> tuple[tuple[int, int, int], Any]:
    """One structure's differentiable ``(offset, crop)`` from its walks: confidence stop, then
    the maximum where two walks reached a frame; 0 outside the crop (``-inf`` for logits).
    """
    import torch
    import torch.nn.functional as F

    fill = float("-inf") if logits else 0.0
    pieces: dict[int, list] = {}
    for walk, out in parts:
        keep = confidence_stop(
            out.values, min_confidence, threshold, walk.last_conditioning_step(), logits
        )
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
