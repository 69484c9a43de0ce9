"""Square attack (Andriushchenko et al., ECCV 2020), L-inf, no gradients (docs/api/attacks.md)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from napari_segeval.attacks._problem import AttackOutput, Problem

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: Queries (of 10,000) after which the square fraction ``p`` halves (the paper's schedule).
P_BREAKS = (10, 50, 200, 500, 1000, 2000, 4000, 6000, 8000)


def p_selection(query: int, n_queries: int, p_init: float, schedule: str = "rescaled") -> float:
    """Fraction of the input one square covers at query ``query`` (0-based).

    ``"rescaled"`` (AutoAttack) maps the query to ``int(query / n_queries * 10000)`` first;
    ``"absolute"`` (ROG) takes it as it is."""
    if schedule not in ("rescaled", "absolute"):
        raise ValueError(f"Square schedule must be 'rescaled' or 'absolute', got {schedule!r}")
    it = int(query / n_queries * 10000) if schedule == "rescaled" else int(query)
    return p_init / 2 ** sum(it > b for b in P_BREAKS)


def _spatial_axes(problem: Problem) -> list[int]:
    return [a for a in range(1, problem.x.ndim) if a != problem.channel_axis]


def _signs(shape: list[int], gen: torch.Generator) -> torch.Tensor:
    import torch

    return torch.randint(0, 2, shape, generator=gen).float() * 2 - 1


def stripe_axis(sizes: dict[int, int]) -> int | None:
    """The axis (of ``{axis: size}``, spatial axes in order) the stripes are constant along.

    Among the axes longer than 1: the last of three or more (a volume's ``x``,
    ROG's nibabel first axis), else the first (a 2D image's rows, the paper's).
    """
    longer = [a for a, n in sizes.items() if n > 1]
    if not longer:
        return None
    return longer[-1] if len(longer) >= 3 else longer[0]


def stripes(problem: Problem) -> torch.Tensor:
    """The starting point: ``+-eps`` constant along :func:`stripe_axis`."""
    x = problem.x
    shape = list(x.shape)
    axis = stripe_axis({a: shape[a] for a in _spatial_axes(problem)})
    if axis is not None:
        shape[axis] = 1
    delta = (_signs(shape, problem.gen) * problem.cfg.eps).expand(x.shape)
    return problem.project_(delta.to(x.device, x.dtype).contiguous())


def square_side(p: float, sizes: list[int]) -> int:
    """Side of a cube covering about ``p`` of a grid of ``sizes`` (axes longer than 1)."""
    d = max(sum(n > 1 for n in sizes), 1)
    return max(1, round((p * math.prod(sizes)) ** (1.0 / d)))


def _window_(delta: torch.Tensor, case: int, problem: Problem, side: int) -> None:
    """Set one random window of ``delta[case]`` to ``+-eps`` (one sign per channel), in place."""
    import torch

    x, ch, gen = problem.x, problem.channel_axis, problem.gen
    index: list = [case]
    value_shape = []
    for a in range(1, x.ndim):
        n = x.shape[a]
        value_shape.append(n if a == ch else 1)
        if a == ch:
            index.append(slice(None))
        else:
            start = int(torch.randint(0, n - min(side, n) + 1, (1,), generator=gen))
            index.append(slice(start, start + min(side, n)))
    n_signs = x.shape[ch] if ch is not None else 1
    value = _signs([n_signs], gen).reshape(value_shape) * problem.cfg.eps
    delta[tuple(index)] = value.to(delta.device, delta.dtype)


def square(problem: Problem) -> AttackOutput:
    """Run the Square attack (L-inf) with restarts; only forward passes."""
    import torch

    cfg = problem.cfg
    n = problem.x.shape[0]
    sizes = [problem.x.shape[a] for a in _spatial_axes(problem)]
    thr = problem.threshold
    queries = torch.zeros(n, dtype=torch.long)
    for r in problem.restarts(cfg.restarts):
        frozen = problem.frozen if problem.frozen is not None else torch.zeros(n, dtype=torch.bool)
        delta = stripes(problem)
        loss, _, logits = problem.evaluate(delta, need_grad=False)
        dice = problem.track(delta, logits, loss, mask=~frozen.to(loss.device))
        problem.record(r, 0, loss, dice)
        for q in range(cfg.steps):
            searching = ~frozen.to(dice.device)
            if thr is not None:
                searching &= dice > thr
            if not bool(searching.any()):
                break
            side = square_side(p_selection(q, cfg.steps, cfg.p_init, cfg.schedule), sizes)
            cand = delta.clone()
            for i in torch.nonzero(searching).flatten().tolist():
                _window_(cand, i, problem, side)
            problem.project_(cand)
            new_loss, _, logits = problem.evaluate(cand, need_grad=False)
            new_dice = problem.track(
                cand, logits, new_loss, candidate=cfg.keep_best, mask=searching
            )
            accept = searching & (new_loss > loss)
            if thr is not None:
                accept |= searching & (new_dice <= thr)
            if not cfg.keep_best and bool(accept.any()):
                problem.track(cand, logits, new_loss, mask=accept)
            delta[accept] = cand[accept]
            loss = torch.where(accept, new_loss, loss)
            dice = torch.where(accept, new_dice, dice)
            queries += searching.cpu().long()
            problem.record(r, q + 1, new_loss, new_dice, accepted=accept, side=side)
    problem.info["queries"] = queries.tolist()
    return problem.output()
