"""Local corrections of the built-in prompt model: a click that refines a result.

A point after a structure's last box or mask acts on its result only where the result
shares the error (steps 0-2: :func:`bridge`, the clicked slice, :func:`spread`);
slices no pass reaches keep their masks exactly. Imports torch.
"""

from __future__ import annotations

from typing import Any

import torch

from napari_segeval._cancel import check_cancel
from napari_segeval.models._prompt_walks import (
    FramePlan,
    bbox_window,
    box_plane,
    click_window,
    full,
    net_pass,
    plan,
)
from napari_segeval.prompts.prompt_set import Point, PromptSet

#: A click spreads to the next slice only when its change there overlaps the change on
#: the slice before by at least this IoU (:func:`spread`).
SHARED_CHANGE = 0.5
#: A click spreads at most this many slices each way from its own.
MAX_SPREAD = 2


def shared(change: torch.Tensor, before: torch.Tensor, threshold: float = SHARED_CHANGE) -> bool:
    """Whether boolean changes ``change`` and ``before`` overlap by IoU >= ``threshold``."""
    union = int((change | before).sum())
    return union > 0 and int((change & before).sum()) / union >= threshold


def confident(prob: torch.Tensor, min_confidence: float | None) -> bool:
    """The confidence stop's test on one slice: mean foreground probability (p > 0.5)
    at least ``min_confidence`` (:func:`~napari_segeval.propagation.walks.confidence_stop`).
    """
    fg = prob > 0.5
    if min_confidence is None or not bool(fg.any()):
        return True
    return float(prob[fg].mean()) >= float(min_confidence)


def takes(prob: torch.Tensor, point: Point) -> bool:
    """Whether output ``prob`` ``(H, W)`` agrees with ``point`` at its pixel."""
    y, x = point.pixel
    h, w = prob.shape
    inside = 0 <= y < h and 0 <= x < w
    return inside and bool(prob[y, x] > 0.5) == point.positive


def _click_pass(
    net: Any,
    size: int,
    x: torch.Tensor,
    f: int,
    prior: torch.Tensor,
    p: FramePlan,
) -> torch.Tensor | None:
    """One click pass of plan ``p`` on frame ``f`` from ``prior``; None: nothing to refine."""
    h, w = x.shape[1:]
    window = click_window(p, prior, p.points, (h, w))
    planes = torch.stack([x[f], x[f], prior, box_plane(p.box, (h, w), x)])
    return _pass(net, size, x, planes, window, [[(c.y, c.x, c.positive) for c in p.points]])


def _pass(
    net: Any, size: int, x: torch.Tensor, planes: torch.Tensor, window: Any, clicks: Any
) -> torch.Tensor | None:
    """One network pass on ``planes`` in ``window``, at full size; None without a window."""
    if window is None:
        return None
    shape = (int(x.shape[1]), int(x.shape[2]))
    return full(net_pass(net, size, [planes], [window], clicks, shape)[0], shape, x)


def bridge(
    net: Any,
    size: int,
    x: torch.Tensor,
    prompts: PromptSet,
    previous: torch.Tensor,
    cancel: Any = None,
) -> tuple[dict[int, torch.Tensor], torch.Tensor] | None:
    """Step 0: a positive click on a slice the result leaves empty is reached by ordinary
    propagation steps from the nearest slice with a mask (no confidence stop, never across
    a prompted slice, dropped when the clicked slice comes out empty).

    Returns ``(bridged slices -> probabilities, the step's output on the clicked slice)``,
    or None when no bridge is made.
    """
    point = prompts.prompts[-1]
    f = int(point.index)
    if not point.positive or bool(previous[f].any()) or not isinstance(prompts.active(f)[0], Point):
        return None
    filled = previous.flatten(1).any(1).nonzero().flatten().tolist()
    if not filled:
        return None
    g = min(filled, key=lambda k: (abs(k - f), k))  # nearest; a tie goes to the lower
    step = 1 if f > g else -1
    if set(prompts.frames) & set(range(g + step, f, step)):
        return None
    bridged: dict[int, torch.Tensor] = {}
    prior = previous[g].float()
    for k in range(g + step, f + step, step):
        check_cancel(cancel, "correction")
        planes = torch.stack([x[k], x[k - step], prior, torch.zeros_like(prior)])
        out = _pass(net, size, x, planes, bbox_window(prior > 0.5), None)  # a propagation step
        if out is None or not bool((out > 0.5).any()):
            return None
        bridged[k] = out
        prior = (out > 0.5).float()
    return {k: v for k, v in bridged.items() if k != f}, bridged[f]


def spread(
    net: Any,
    size: int,
    x: torch.Tensor,
    prompts: PromptSet,
    start: torch.Tensor,
    previous: torch.Tensor,
    min_confidence: float | None,
    cancel: Any = None,
) -> dict[int, torch.Tensor]:
    """Step 2: the slices the click changes beyond its own, at most :data:`MAX_SPREAD` each way.

    Each is a click pass on its own previous mask with this click alone; a direction ends
    before a prompted slice, a slice without a mask, one whose output does not take the
    click, one below the confidence stop, or one whose change overlaps the previous
    slice's change by an IoU below :data:`SHARED_CHANGE`.
    """
    n = x.shape[0]
    point = prompts.prompts[-1]
    f = int(point.index)
    stops = set(prompts.frames)
    changed: dict[int, torch.Tensor] = {}
    for step in (1, -1):
        before, g = (start > 0.5) ^ previous[f], f + step
        while (
            0 <= g < n and abs(g - f) <= MAX_SPREAD and g not in stops and bool(previous[g].any())
        ):
            check_cancel(cancel, "correction")
            new = _click_pass(net, size, x, g, previous[g].float(), plan((point,)))
            if new is None or not takes(new, point) or not confident(new, min_confidence):
                break
            change = (new > 0.5) ^ previous[g]
            if not shared(change, before):
                break
            changed[g] = new
            if not bool((new > 0.5).any()):  # nothing spreads from a slice left empty
                break
            before, g = change, g + step
    return changed


def correct(
    net: Any,
    size: int,
    x: torch.Tensor,
    prompts: PromptSet,
    previous: torch.Tensor,
    min_confidence: float | None,
    cancel: Any = None,
) -> dict[int, torch.Tensor]:
    """Slice -> new probabilities ``(H, W)`` of the correction by ``prompts``' last prompt."""
    prompt = prompts.prompts[-1]
    if not isinstance(prompt, Point):
        raise ValueError(f"a correction is a point, got {type(prompt).__name__}")
    check_cancel(cancel, "correction")
    f = int(prompt.index)
    made = bridge(net, size, x, prompts, previous, cancel)
    bridged, prior = made if made is not None else ({}, previous[f].float())
    # step 1: one click pass on the clicked slice's mask with its box and all its points so far
    new = _click_pass(net, size, x, f, prior, plan(prompts.active(f)))
    if new is None:  # a negative click where the mask is empty
        return {}
    if not bool((new > 0.5).any()):
        return {f: new}  # the click found nothing there: no bridge to it, no spread
    changed = {**bridged, f: new}
    changed.update(spread(net, size, x, prompts, new, previous, min_confidence, cancel))
    return changed
