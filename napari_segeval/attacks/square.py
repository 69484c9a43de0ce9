"""Square attack (Andriushchenko et al., ECCV 2020), L-inf, adapted to segmentation.

A score-based black-box attack: it only *queries* the model (forward passes under
``torch.no_grad``) and never asks for a gradient, so it also measures models
whose gradients are useless (masked, obfuscated) and costs no backward pass.

Per case, inside the L-inf ball of radius ``eps`` (and the optional valid input
range):

1. Start from *stripes*: ``delta = +-eps``, one random sign per position of the
   other axes, constant along one spatial axis (:func:`stripe_axis`): in a
   volume the last, ``x`` (our arrays are ``(z, y, x)``, the reverse of
   nibabel's ``(x, y, z)``, so this is the first axis of the nibabel arrays
   ROG's ``attack_single_run`` draws its stripes along, an in-plane axis); in a
   2D image the first, rows (the paper's vertical stripes, ``[c, 1, w]``).
2. Each query draws a window - a cube of side ``s = round((p V)^(1/d))`` over
   the ``d`` spatial axes longer than 1 (``V`` spatial elements), clipped to
   each axis, at a uniformly random position - and sets it to ``+-eps`` (one
   random sign per image channel) in a copy of the accepted perturbation.
3. The copy is accepted when the case's loss strictly increases or, with a
   ``robust_threshold``, when its Dice falls to the threshold or below
   (ROG's rule, theirs strictly below). A case at or below the threshold is no longer queried; when
   no case is left the attack stops.

The fraction ``p`` starts at ``p_init`` (0.8) and halves after query 10, 50,
200, 500, 1000, 2000, 4000, 6000 and 8000 of 10,000 (the paper's schedule):
``schedule="rescaled"`` (default, the AutoAttack package) stretches these
breakpoints to ``steps`` queries; ``schedule="absolute"`` uses them as they are
(ROG: with their 5 queries, ``p`` stays 0.8).

Segmentation adaptation: the objective is the configured per-case loss
(``loss="ce"`` by default: the per-voxel cross-entropy against the target,
averaged over the case's voxels; ``loss="hard-dice"``: ``1 -`` the hard Dice,
which is what ROG's ``margin_and_loss`` returns and minimizes). ``steps`` is the
number of queries per restart; each costs exactly one forward pass (plus one for
the stripes start). The iterate returned per case is the evaluated query with
the lowest Dice (``keep_best``), or the last accepted one (``keep_best=False``).

Differences from ROG's ``rog/autoattack/square.py`` (BCV-Uniandes/ROG):

* one forward pass per query (theirs makes three: the candidate, and the whole
  batch's current best twice to print the success rate);
* the window side is clipped to each axis and its corner drawn among the valid
  positions (theirs draws ``randint(0, d - s)``, which never reaches the last
  position and is negative - Python's negative slicing moves the cube to the
  other end - whenever the cube is deeper than the volume);
* one window position per case (theirs: one for the whole batch);
* perturbed inputs stay in the preprocessing's valid range when ``clamp`` is
  set (theirs clamps z-scored inputs to [0, 1], a recipe bug);
* their ``perturb`` returns the last restart's batch (``adv_curr``), not the
  accumulated result; here every restart's result is kept.

Examples
--------
>>> p_selection(0, 5, 0.8), p_selection(1, 5, 0.8), p_selection(1, 5, 0.8, "absolute")
(0.8, 0.025, 0.8)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from napari_segeval.attacks._problem import AttackOutput, Problem, record_step

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: Queries (of 10,000) after which the square fraction ``p`` halves (the paper's schedule).
P_BREAKS = (10, 50, 200, 500, 1000, 2000, 4000, 6000, 8000)


def p_selection(query: int, n_queries: int, p_init: float, schedule: str = "rescaled") -> float:
    """Fraction of the input one square covers at query ``query`` (0-based).

    ``"rescaled"`` maps the query to ``int(query / n_queries * 10000)`` first.

    Examples
    --------
    >>> [p_selection(q, 10000, 0.8, "absolute") for q in (10, 11, 51, 8001)]
    [0.8, 0.4, 0.2, 0.0015625]
    """
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

    Examples
    --------
    >>> stripe_axis({2: 24, 3: 48, 4: 40}), stripe_axis({2: 48, 3: 40}), stripe_axis({2: 1, 3: 40})
    (4, 2, 3)
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
    """Side of a cube covering about ``p`` of a grid of ``sizes`` (axes longer than 1).

    Examples
    --------
    >>> square_side(0.8, [24, 48, 48]), square_side(0.01, [1, 64, 64]), square_side(1e-9, [9])
    (35, 6, 1)
    """
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
        if a == ch:
            index.append(slice(None))
            value_shape.append(n)
            continue
        s = min(side, n)
        start = int(torch.randint(0, n - s + 1, (1,), generator=gen))
        index.append(slice(start, start + s))
        value_shape.append(1)
    n_signs = x.shape[ch] if ch is not None else 1
    value = _signs([n_signs], gen).reshape(value_shape) * problem.cfg.eps
    delta[tuple(index)] = value.to(delta.device, delta.dtype)


def square(problem: Problem) -> AttackOutput:
    """Run the Square attack (L-inf) with restarts; only forward passes."""
    import torch

    cfg = problem.cfg
    history: list[dict] = []
    n = problem.x.shape[0]
    sizes = [problem.x.shape[a] for a in _spatial_axes(problem)]
    thr = problem.threshold
    queries = torch.zeros(n, dtype=torch.long)
    problem.start(history)
    for r in range(cfg.restarts):
        if not problem.begin_restart(r):
            break
        frozen = problem.frozen if problem.frozen is not None else torch.zeros(n, dtype=torch.bool)
        delta = stripes(problem)
        loss, _, logits = problem.evaluate(delta, need_grad=False)
        dice = problem.track(delta, logits, loss, mask=~frozen.to(loss.device))
        record_step(history, r, 0, loss, dice)
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
            record_step(history, r, q + 1, new_loss, new_dice, accepted=accept, side=side)
    problem.info["queries"] = queries.tolist()
    return problem.output(history)
