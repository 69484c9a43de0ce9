"""Walks of the built-in prompt model: one structure x direction each, advanced together.

Each walk crops its own window around its object, so nothing is shared between
walks but the frames; what several walks gain is the batch: at step ``j`` every
walk still going visits its ``j``-th frame
(:func:`napari_segeval.models.base.walk_steps`), and their crops can go through the
network as one batch (``batch=True``: one call instead of one per walk, which pays
on a GPU; CPU convolutions are not bit-identical across batch sizes, so there the
default is one walk at a time and every result is exactly that of the walk alone).

Torch is imported by this module: import it only inside functions elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from napari_segeval._cancel import check_cancel
from napari_segeval.models._prompt_net import crop, paste, window_from_bbox
from napari_segeval.models.base import Walk


@dataclass
class WalkState:
    """One walk: frames in visit order, its prompts, current prior and crop window."""

    idx: list[int]
    boxmask: torch.Tensor
    prior: torch.Tensor
    window: tuple[float, float, float]
    given: torch.Tensor | None
    out: list = field(default_factory=list)
    stopped: bool = False


def start(x: torch.Tensor, walk: Walk) -> WalkState:
    """The state of ``walk`` on frames ``x`` ``(n, H, W)`` before its key frame."""
    n, h, w = x.shape
    b = walk.box.clip((h, w))
    boxmask = torch.as_tensor(b.to_mask((h, w)), dtype=torch.float32, device=x.device)
    prior = boxmask if walk.init_mask is None else torch.as_tensor(
        walk.init_mask, dtype=torch.float32, device=x.device)
    given = None if walk.prior_volume is None else torch.as_tensor(
        walk.prior_volume, dtype=torch.float32, device=x.device).detach()
    if given is not None and tuple(given.shape) != (n, h, w):
        raise ValueError(f"prior_volume must be {(n, h, w)}, got {tuple(given.shape)}")
    return WalkState(walk.frames(n).tolist(), boxmask, prior,
                     window_from_bbox(b.y0, b.x0, b.y1, b.x1), given)


def _bbox_window(mask: torch.Tensor) -> tuple[float, float, float] | None:
    fg = mask.nonzero()
    if fg.shape[0] == 0:
        return None
    lo, hi = fg.min(dim=0).values.tolist(), fg.max(dim=0).values.tolist()
    return window_from_bbox(lo[0], lo[1], hi[0] + 1, hi[1] + 1)


def step(net: Any, size: int, x: torch.Tensor, states: list[WalkState], j: int,
         zeros: torch.Tensor) -> torch.Tensor:
    """Probabilities ``(B, H, W)`` of the walks ``states`` at their ``j``-th frame (one batch)."""
    h, w = x.shape[1:]
    planes, windows = [], []
    for s in states:
        f = s.idx[j]
        if s.given is not None and j > 0:  # per-slice chain: the given previous mask
            s.prior = s.given[s.idx[j - 1]]
            s.window = _bbox_window(s.prior > 0.5) or s.window
        prev = x[f] if j == 0 else x[s.idx[j - 1]]
        planes.append(torch.stack([x[f], prev, s.prior, s.boxmask if j == 0 else zeros]))
        windows.append(s.window)
    batch = torch.stack(planes)
    win = torch.tensor(windows, dtype=batch.dtype, device=batch.device)
    logits = net(crop(batch, win, size))
    return paste(torch.sigmoid(logits.float()), win.float(), h, w)[:, 0]


def advance(s: WalkState, prob: torch.Tensor, zeros: torch.Tensor, stop_when_empty: bool) -> int:
    """Record ``prob`` for walk ``s``; returns the steps it skips by stopping (0 if none)."""
    s.out.append(prob)
    window = _bbox_window(prob.detach() > 0.5)
    if window is None:
        if stop_when_empty:
            skipped = len(s.idx) - len(s.out)
            s.out.extend(zeros for _ in range(skipped))
            s.stopped = True
            return skipped
    else:
        s.window = window
    s.prior = prob
    return 0


def run(net: Any, size: int, x: torch.Tensor, states: list[WalkState], *, batch: bool,
        progress: Callable[[int, int], None] | None, cancel: Any,
        stop_when_empty: bool,
        on_frame: Callable[[int, int, torch.Tensor], None] | None = None) -> list[torch.Tensor]:
    """Advance all walks together; probabilities ``(n_visited, H, W)`` of each.

    ``on_frame(walk number, frame, prob)`` (optional) hears each computed frame.
    """
    zeros = torch.zeros(tuple(x.shape[1:]), device=x.device)
    total = sum(len(s.idx) for s in states)
    done = 0
    for j in range(max((len(s.idx) for s in states), default=0)):
        active = [s for s in states if not s.stopped and j < len(s.idx)]
        for group in ([active] if batch and active else [[s] for s in active]):
            check_cancel(cancel, "propagation")
            probs = step(net, size, x, group, j, zeros)
            for s, prob in zip(group, probs):
                if on_frame is not None:
                    on_frame(states.index(s), s.idx[j], prob.detach())
                done += 1
                if progress is not None:
                    progress(done, total)
                skipped = advance(s, prob, zeros, stop_when_empty)
                if skipped:
                    done += skipped
                    if progress is not None:
                        progress(done, total)
    return [torch.stack(s.out) for s in states]
