"""LiteMedSAM's slice-by-slice box chain: every walk of a case, one embedding per slice.

A slice takes the person's box, else the previous result's box grown by 3 px in 256 space,
else (empty result) the last person's box; ``stop_empty``: the chain ends at the first empty
slice after its last prompted one. Chains share one FrameCache and advance together; a
chain's result is the same alone or beside others. Imports torch: import it in functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from napari_segeval.models.walk import StopReason, WalkOptions, step_walks
from napari_segeval.prompts.box import Box

from . import _recipe as R

#: Logits below this are left out of a slice's stored crop (probability < 1e-5, reported
#: as 0: outside every mask and every merge decision).
CROP_LOGIT = -11.5


def box_xyxy(box: Box) -> tuple[int, int, int, int]:
    """A box as the authors' inclusive ``[x_min, y_min, x_max, y_max]``."""
    return box.x0, box.y0, box.x1 - 1, box.y1 - 1


@dataclass
class Chain:
    """One chain's plan (``frames`` in visit order) and state."""

    frames: list[int]
    boxes: dict[int, list[int]]
    last: int = 0
    stop_empty: bool = True
    value: int = 1
    prior: np.ndarray | None = None
    iou_ratio: float | None = None
    key_iou: float | None = None
    fallback: list[int] | None = None
    previous: np.ndarray | None = None
    crops: list = field(default_factory=list)
    ious: list = field(default_factory=list)
    values: list = field(default_factory=list)
    agreement: list = field(default_factory=list)
    jitter: int = 0
    reason: StopReason | None = None
    stopped: bool = False


def _next_box(chain: Chain, j: int, frame: int) -> list[int] | None:
    """The box of ``chain`` at visit ``j`` (``frame``), or None when it stops here."""
    if frame in chain.boxes:
        chain.fallback = chain.boxes[frame]
        return chain.fallback
    source = chain.previous
    if chain.prior is not None:
        source = np.asarray(chain.prior[chain.frames[j - 1]]) > 0.5
    box = (
        None
        if source is None or not source.any()
        else R.box_of_256(R.mask_to_256(source, chain.value))
    )
    if box is not None:
        return box
    if chain.stop_empty and j - 1 >= chain.last:
        return None
    return chain.fallback


def jittered_boxes(box: list[int], n: int, seed: int) -> list[list[int]]:
    """``n`` boxes with each edge moved by up to a tenth of the box's side (at least 1 px)."""
    rng = np.random.default_rng(int(seed))
    x0, y0, x1, y1 = box
    rx, ry = max(1, round(0.1 * (x1 - x0))), max(1, round(0.1 * (y1 - y0)))
    out = []
    for _ in range(int(n)):
        dx0, dx1 = rng.integers(-rx, rx + 1, 2)
        dy0, dy1 = rng.integers(-ry, ry + 1, 2)
        a, b = min(max(0, x0 + dx0), 255), min(max(0, y0 + dy0), 255)
        c, d = min(max(a + 1, x1 + dx1), 256), min(max(b + 1, y1 + dy1), 256)
        out.append([int(a), int(b), int(c), int(d)])
    return out


def agreement(logits: torch.Tensor, jittered: torch.Tensor) -> float:
    """Mean :func:`~napari_segeval.metrics.overlap.mask_dice` of the mask of ``logits`` and
    each mask of ``jittered`` (one more leading axis)."""
    from napari_segeval.metrics.overlap import mask_dice

    ref = (logits.detach() > 0).cpu().numpy()
    dice = [mask_dice(ref, (j > 0).cpu().numpy()) for j in jittered.detach()]
    return float(np.mean(dice)) if dice else float("nan")


def _store(chain: Chain, logits: torch.Tensor, grad: bool) -> None:
    """Keep a slice's probabilities inside the crop where they can matter."""
    keep = (logits.detach() > CROP_LOGIT).nonzero()
    if keep.numel() == 0:
        chain.crops.append(None)
        chain.values.append(None)
        return
    (y0, x0), (y1, x1) = keep.min(dim=0).values.tolist(), keep.max(dim=0).values.tolist()
    crop = logits[y0 : y1 + 1, x0 : x1 + 1]
    chain.crops.append((y0, x0, y1 + 1, x1 + 1))
    chain.values.append(torch.sigmoid(crop if grad else crop.detach()))


def _decode(
    net: Any, embedding: torch.Tensor, box: list[int], jitter: int, frame: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The logits and IoU of ``box``, and the logits of ``jitter`` jittered boxes."""
    together = jitter > 0 and net.fast_decoder is not None
    prompts = [box] + (jittered_boxes(box, jitter, frame) if together else [])
    logits, iou = net.decode(embedding, torch.tensor(prompts, dtype=torch.float32))
    logits, others = logits[:1], logits[1:]
    if jitter > 0 and not together:
        boxes = torch.tensor(jittered_boxes(box, jitter, frame), dtype=torch.float32)
        others = net.decode(embedding, boxes)[0]
    return logits, iou, others


def run(
    net: Any, cache: Any, chains: list[Chain], shape: tuple[int, int], options: WalkOptions
) -> None:
    """Advance every chain to its end (results in its ``crops`` and ``values``)."""
    h, w = shape
    resized = R.resized_size(h, w)
    grad = options.grad

    def end(c: Chain, j: int) -> list:
        """End ``c`` before visit ``j``: its frames from ``j`` on are not read."""
        for k in range(j, len(c.frames)):
            cache.forget(c.frames[k], k)
        return [None]

    def step(group: list[Chain], j: int) -> list:
        c = group[0]
        frame = c.frames[j]
        box = _next_box(c, j, frame) if j else c.boxes.get(frame)
        if box is None:
            return end(c, j)
        if j == 0:
            c.fallback = box
        embedding = cache.get(frame)[0]
        jittered = c.jitter and not grad
        logits, iou, others = _decode(net, embedding, box, c.jitter if jittered else 0, frame)
        quality = float(iou.detach()[0])
        if frame in c.boxes:
            c.key_iou = quality
        elif (
            c.stop_empty
            and c.iou_ratio is not None
            and c.key_iou is not None
            and j > c.last
            and quality < c.iou_ratio * c.key_iou
        ):
            c.reason = StopReason.IOU  # the quality stop: this slice and the rest left out
            end(c, j + 1)
            return [None]
        c.ious.append(quality)
        if jittered:
            c.agreement.append(agreement(logits[0], others))
        logits = R.to_slice(logits, resized, (h, w))[0]
        c.previous = (torch.sigmoid(logits.detach()) > 0.5).cpu().numpy()
        _store(c, logits.float(), grad)
        return [(torch.sigmoid(logits.detach().float()), False)]

    step_walks(chains, options, step, what="LiteMedSAM propagation")


def correction_reach(index: int, others: frozenset[int], order: str) -> int | None:
    """Slices a correction box's walk may take: ``ceil(d / 2)`` for the next box of
    ``others`` ``d`` slices ahead (a tie stays with the older box); None: no box ahead.
    """
    ahead = [o for o in others if (o > index if order == "forward" else o < index)]
    if not ahead:
        return None
    d = min(abs(o - index) for o in ahead)
    return (d + 1) // 2
