"""Walks of the built-in prompt model: one structure x direction each, advanced together.

Per frame: a box pass on a box frame, a mask prompt as the output, then one pass per point
(docs/design.md, "Prompt sets and walks"); ``batch=True`` batches the walks' crops (GPUs:
CPU kernels differ in the last bits across batch sizes). Imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from napari_segeval.models._prompt_net import (
    PromptUNet,
    Region,
    bbox,
    click_maps,
    crop,
    paste_theta,
    refine_window,
    window_from_bbox,
)
from napari_segeval.models.walk import Walk, WalkOptions, WalkOutput, step_walks
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt


@dataclass
class PriorWalk:
    """One walk's state (built-in or threshold model): its prior, window and outputs so far."""

    walk: Walk
    frames: list[int]
    prior: torch.Tensor
    window: tuple[float, float, float] | None
    given: torch.Tensor | None
    last: int
    boxes: list = field(default_factory=list)
    values: list = field(default_factory=list)
    stopped: bool = False


@dataclass
class FramePlan:
    """A walk's passes on its current frame: the base pass, then the clicks."""

    base: str  # "step", "box", "mask" or "none"
    box: Box | None
    mask: MaskPrompt | None
    points: tuple


def start(x: torch.Tensor, walk: Walk) -> PriorWalk:
    """The state of ``walk`` on frames ``x`` ``(n, H, W)`` before its first frame."""
    n, h, w = x.shape
    given = walk.prior_volume
    if given is not None:
        given = torch.as_tensor(given, dtype=torch.float32, device=x.device).detach()
        if tuple(given.shape) != (n, h, w):
            raise ValueError(f"prior_volume must be {(n, h, w)}, got {tuple(given.shape)}")
    return PriorWalk(
        walk,
        walk.frames(n).tolist(),
        torch.zeros((h, w), device=x.device),
        None,
        given,
        walk.last_conditioning_step(),
    )


def plan(active: tuple, first: bool = False) -> FramePlan:
    """The passes on a frame of its ``active`` prompts (``first``: the walk's first frame)."""
    base = active[0] if active else None
    if isinstance(base, Box):
        return FramePlan("box", base, None, active[1:])
    if isinstance(base, MaskPrompt):
        return FramePlan("mask", None, base, active[1:])
    return FramePlan("none" if first and active else "step", None, None, active)


def bbox_window(mask: torch.Tensor) -> tuple[float, float, float] | None:
    b = bbox(mask)
    return None if b is None else window_from_bbox(*b)


def click_window(
    p: FramePlan, current: torch.Tensor | None, clicks: tuple, shape: tuple[int, int]
) -> tuple[float, float, float] | None:
    """The window of a click pass (:func:`~._prompt_net.refine_window`); None: none."""
    return refine_window(
        current,
        [(c.y, c.x, c.positive) for c in clicks],
        box_region(p.box, shape) if p.box is not None else None,
        torch.as_tensor(p.mask.mask) if p.mask is not None else None,
    )


def box_region(box: Box, shape: tuple[int, int]) -> Region:
    b = box.clip(shape)
    return b.y0, b.x0, b.y1, b.x1


def box_plane(box: Box | None, shape: tuple[int, int], like: torch.Tensor) -> torch.Tensor:
    """The box's input plane: 1 inside ``box`` (clipped), 0 elsewhere (all 0 without one)."""
    plane = torch.zeros(shape, device=like.device)
    if box is not None:
        y0, x0, y1, x1 = box_region(box, shape)
        plane[y0:y1, x0:x1] = 1.0
    return plane


def support(
    windows: torch.Tensor, size: int, height: int, width: int
) -> tuple[torch.Tensor, list[Region]]:
    """The paste grid of ``windows`` and per window where a paste can be non-zero (+1 px)."""
    inv = paste_theta(windows, height, width)
    grid = F.affine_grid(inv, [windows.shape[0], 1, height, width], align_corners=False)
    edge = 1.0 + 1.0 / size
    regions = []
    for g in grid:
        rows = ((g[:, 0, 1] > -edge) & (g[:, 0, 1] < edge)).nonzero()[:, 0]
        cols = ((g[0, :, 0] > -edge) & (g[0, :, 0] < edge)).nonzero()[:, 0]
        if rows.numel() == 0 or cols.numel() == 0:
            regions.append((0, 0, 0, 0))
            continue
        y0, x0 = max(int(rows[0]) - 1, 0), max(int(cols[0]) - 1, 0)
        regions.append((y0, x0, min(int(rows[-1]) + 2, height), min(int(cols[-1]) + 2, width)))
    return grid, regions


def paste_regions(
    values: torch.Tensor, windows: torch.Tensor, height: int, width: int
) -> list[tuple[Region, torch.Tensor] | None]:
    """:func:`~._prompt_net.paste` of ``values (B, 1, S, S)`` only where it can be non-zero:
    per window ``(region, values)``, bit for bit that region of the full paste (0 elsewhere)."""
    grid, regions = support(windows.to(values.dtype), values.shape[-1], height, width)
    out: list = []
    for b, (y0, x0, y1, x1) in enumerate(regions):
        if y1 <= y0 or x1 <= x0:  # the window lies outside the frame
            out.append(None)
            continue
        g = grid[b : b + 1, y0:y1, x0:x1]
        v = F.grid_sample(
            values[b : b + 1], g, mode="bilinear", padding_mode="zeros", align_corners=False
        )
        out.append(((y0, x0, y1, x1), v[0, 0]))
    return out


def full(
    piece: tuple[Region, torch.Tensor] | None, shape: tuple[int, int], like: torch.Tensor
) -> torch.Tensor:
    """A cropped frame ``(region, values)`` at full size (0 outside; differentiable)."""
    h, w = shape
    if piece is None:
        return torch.zeros((h, w), dtype=like.dtype, device=like.device)
    (y0, x0, y1, x1), v = piece
    return F.pad(v, (x0, w - x1, y0, h - y1))


def net_pass(
    net: PromptUNet,
    size: int,
    planes: list[torch.Tensor],
    windows: list,
    clicks: list[list] | None,
    shape: tuple[int, int],
) -> list:
    """One batch through the network: pasted probabilities per element."""
    batch = torch.stack(planes)
    win = torch.tensor(windows, dtype=batch.dtype, device=batch.device)
    inputs = crop(batch, win, size)
    if net.takes_points:
        maps = click_maps(clicks or [[] for _ in planes], win.float(), size)
        inputs = torch.cat([inputs, maps.to(inputs.dtype)], dim=1)
    logits = net(inputs)
    return paste_regions(torch.sigmoid(logits.float()), win.float(), *shape)


def base_pass(
    net: Any, size: int, x: torch.Tensor, group: list[PriorWalk], j: int, plans: list[FramePlan]
) -> list:
    """Round 0 of frame ``j`` for ``group``: each walk's frame output before its clicks."""
    h, w = x.shape[1:]
    zeros = torch.zeros((h, w), device=x.device)
    pieces: list = [None] * len(group)
    todo: list = []
    for i, (s, p) in enumerate(zip(group, plans)):
        f = s.frames[j]
        if s.given is not None and j > 0:  # per-slice chain: the given previous mask
            s.prior = s.given[s.frames[j - 1]]
            s.window = bbox_window(s.prior > 0.5) or s.window
        if p.mask is not None:  # base "mask": the prompt is the output
            mask = torch.as_tensor(p.mask.mask, device=x.device)
            region = bbox(mask)
            if region is not None:
                y0, x0, y1, x1 = region
                pieces[i] = region, mask[y0:y1, x0:x1].float()
                s.window = window_from_bbox(*region)
        elif p.box is not None:  # base "box"
            boxmask = box_plane(p.box, (h, w), x)  # every box frame is a fresh start
            plane = torch.stack([x[f], x[f], boxmask, boxmask])
            todo.append((i, plane, window_from_bbox(*box_region(p.box, (h, w))), []))
        elif p.base == "step" and s.window is not None:
            plane = torch.stack([x[f], x[s.frames[j - 1]], s.prior, zeros])
            todo.append((i, plane, s.window, []))
    _run(net, size, group, pieces, todo, (h, w))
    return pieces


def _run(net: Any, size: int, group: list, pieces: list, todo: list, shape: tuple) -> None:
    """Run ``todo`` ``(walk i, plane, window, clicks)`` as one batch; walk ``i`` takes output and window."""
    if todo:
        idx, planes, windows, clicks = (list(v) for v in zip(*todo))
        for i, win, piece in zip(idx, windows, net_pass(net, size, planes, windows, clicks, shape)):
            pieces[i] = piece
            group[i].window = win


def click_passes(
    net: Any,
    size: int,
    x: torch.Tensor,
    group: list[PriorWalk],
    j: int,
    plans: list[FramePlan],
    pieces: list,
) -> list:
    """The click passes of frame ``j``, one round per click (walks batched per round)."""
    h, w = x.shape[1:]
    for k in range(max((len(p.points) for p in plans), default=0)):
        todo: list = []
        for i, (s, p) in enumerate(zip(group, plans)):
            if k >= len(p.points):
                continue
            current = full(pieces[i], (h, w), x) if pieces[i] is not None else None
            so_far = p.points[: k + 1]
            window = click_window(p, current, so_far, (h, w))
            if window is None:
                continue
            prior = current if current is not None else torch.zeros((h, w), device=x.device)
            plane = torch.stack(
                [x[s.frames[j]], x[s.frames[j]], prior, box_plane(p.box, (h, w), x)]
            )
            todo.append((i, plane, window, [(c.y, c.x, c.positive) for c in so_far]))
        _run(net, size, group, pieces, todo, (h, w))
    return pieces


def record(s: PriorWalk, piece: tuple[Region, torch.Tensor] | None, like: torch.Tensor) -> tuple:
    """Record ``piece`` as walk ``s``'s frame output; ``(probability, empty)``."""
    s.boxes.append(None if piece is None else piece[0])
    s.values.append(None if piece is None else piece[1])
    window = None
    if piece is not None:
        (y0, x0, _, _), v = piece
        region = bbox(v.detach() > 0.5)
        if region is not None:
            window = window_from_bbox(
                region[0] + y0, region[1] + x0, region[2] + y0, region[3] + x0
            )
    s.window = window or s.window
    s.prior = full(piece, (int(s.prior.shape[0]), int(s.prior.shape[1])), like)
    return s.prior.detach(), window is None


def run(
    net: Any, size: int, x: torch.Tensor, states: list[PriorWalk], batch: bool, options: WalkOptions
) -> list[WalkOutput]:
    """Advance all walks together; each walk's :class:`~.walk.WalkOutput`."""

    def step(group: list[PriorWalk], j: int) -> list:
        plans = [plan(s.walk.prompts.active(s.frames[j]), j == 0) for s in group]
        pieces = base_pass(net, size, x, group, j, plans)
        pieces = click_passes(net, size, x, group, j, plans, pieces)
        return [record(s, piece, x) for s, piece in zip(group, pieces)]

    step_walks(states, options, step, batch=batch)
    h, w = x.shape[1:]
    for s in states:
        s.boxes.extend([None] * (len(s.frames) - len(s.boxes)))
        s.values.extend([None] * (len(s.frames) - len(s.values)))
    return [WalkOutput(s.frames, s.boxes, s.values, (int(h), int(w))) for s in states]
