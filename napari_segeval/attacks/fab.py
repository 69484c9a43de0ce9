"""FAB-T (Croce & Hein, ICML 2020), targeted minimal-norm, L-inf (docs/api/attacks.md)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from napari_segeval.attacks._problem import AttackOutput, Problem
from napari_segeval.attacks.losses import case_dice

if TYPE_CHECKING:  # pragma: no cover
    import torch

ALPHA_MAX = 0.1
ETA = 1.05
BETA = 0.9


def project_to_hyperplane(
    w: torch.Tensor,
    r: torch.Tensor,
    room_up: torch.Tensor | None = None,
    room_down: torch.Tensor | None = None,
) -> torch.Tensor:
    """Smallest L-inf ``d`` per row with ``<w, d> = r``, ``-room_down <= d <= room_up``.

    Rows are cases ``(N, M)``; ``r`` is ``(N,)``. With no room given the box is unbounded and
    ``d = sign(r w) |r| / ||w||_1``. When the box cannot reach the hyperplane, every coordinate
    moves as far as it can towards it. Coordinates with ``w = 0`` do not move.
    """
    import torch

    w, r = w.double(), r.double()
    a = w.abs()
    direction = torch.sign(w) * torch.sign(r)[:, None]
    need = r.abs()
    if room_up is None or room_down is None:  # both or neither
        t = need / a.sum(dim=1).clamp(min=1e-300)
        return (direction * t[:, None] * (a > 0)).to(w.dtype)
    cap = torch.where(direction > 0, room_up.double(), room_down.double()).clamp(min=0)
    cap = torch.where(a > 0, cap, torch.zeros_like(cap))
    srt, order = cap.sort(dim=1)
    a_s = a.gather(1, order)
    # g(t) = sum_i a_i min(t, cap_i); at t = cap_(j): sum_{i<j} a_i cap_i + cap_(j) sum_{i>=j} a_i
    done_before = torch.cumsum(a_s * srt, dim=1) - a_s * srt
    rest = a_s.flip(1).cumsum(1).flip(1)
    g = done_before + srt * rest
    reach = g >= need[:, None]
    j = reach.float().argmax(dim=1)  # first breakpoint that reaches the hyperplane
    rows = torch.arange(w.shape[0], device=w.device)
    t = (need - done_before[rows, j]) / rest[rows, j].clamp(min=1e-300)
    t = torch.where(reach.any(dim=1), t, torch.full_like(t, float("inf")))
    return direction * torch.minimum(t[:, None], cap)


def _gap(logits: torch.Tensor, label: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Case mean of ``z_target - z_label`` (FAB's decision function; 0 on the boundary)."""
    z = logits.float()
    gap = z.gather(1, target.unsqueeze(1)) - z.gather(1, label.unsqueeze(1))
    return gap.reshape(gap.shape[0], -1).mean(dim=1)


def fab_evaluations(cfg: Any, num_classes: int | None) -> int:
    """Forward passes of FAB: clean + (fwd+bwd, fwd) per iteration and run + the answer."""
    ranks = cfg.target_ranks or max((num_classes or 2) - 1, 1)
    return 2 + 2 * cfg.steps * cfg.restarts * ranks


def _step(problem: Problem, delta: torch.Tensor, f: torch.Tensor, grad: torch.Tensor):
    """One FAB update of ``delta`` (delta space: the clean input is 0)."""
    import torch

    n = delta.shape[0]
    flat = delta.reshape(n, -1).double()
    w = grad.reshape(n, -1).double()
    up = down = up0 = down0 = None
    if problem.lo is not None and problem.hi is not None:  # both or neither
        lo = (problem.lo - problem.x).reshape(n, -1).double()
        hi = (problem.hi - problem.x).reshape(n, -1).double()
        up, down, up0, down0 = hi - flat, flat - lo, hi, -lo
    # boundary: f + <w, p - delta> = 0, from p = delta and from p = 0
    d1 = project_to_hyperplane(w, -f.double(), up, down)
    d2 = project_to_hyperplane(w, -f.double() + (w * flat).sum(dim=1), up0, down0)
    a1 = d1.abs().amax(dim=1).clamp(min=1e-8)
    a2 = d2.abs().amax(dim=1).clamp(min=1e-8)
    alpha = (a1 / (a1 + a2)).clamp(0.0, ALPHA_MAX)[:, None]
    new = (flat + ETA * d1) * (1 - alpha) + (ETA * d2) * alpha
    if problem.lo is not None:
        new = torch.minimum(torch.maximum(new, lo), hi)
    return new.reshape(delta.shape).to(delta.dtype)


def fab(problem: Problem) -> AttackOutput:
    """Run FAB-T (L-inf) over the target ranks and restarts (docs/api/attacks.md)."""
    import torch

    cfg, x = problem.cfg, problem.x
    n, eps = x.shape[0], float(cfg.eps)
    zero = torch.zeros_like(x)
    clean_loss, _, clean_logits = problem.evaluate(zero, need_grad=False)
    n_classes = int(clean_logits.shape[1])
    if n_classes < 2:
        raise ValueError("FAB needs at least 2 classes (a target class other than the label)")
    max_rank = n_classes - 1
    ranks = cfg.target_ranks or max_rank
    if ranks > max_rank:
        raise ValueError(
            f"target_ranks={ranks} but the model has {n_classes} classes "
            f"(at most {max_rank} other classes per voxel)"
        )
    problem.total = fab_evaluations(cfg, n_classes)
    clean_dice = case_dice(clean_logits, problem.target)
    problem.record(-1, 0, clean_loss, clean_dice, point="clean")
    if problem.threshold is not None:
        thr = torch.full_like(clean_dice, float(problem.threshold))
    else:
        thr = 0.5 * clean_dice
    attack = clean_dice > thr
    best_norm = torch.where(attack, float("inf"), 0.0).double()
    best = zero.clone()
    order = clean_logits.argsort(dim=1, descending=True)
    runs = 0
    for rank in range(2, ranks + 2):
        objective = partial(_gap, label=problem.target, target=order[:, rank - 1])
        for r in range(cfg.restarts):
            todo = attack.clone()
            if problem.threshold is not None:  # ROG: only cases not yet broken within eps
                todo &= ~(best_norm <= eps)
            if not bool(todo.any()):
                break
            runs += 1
            delta = zero.clone() if r == 0 else problem.random_point(scale=0.5)
            for it in range(cfg.steps):
                f, grad, _ = problem.evaluate(delta, need_grad=True, objective=objective)
                with torch.no_grad():
                    delta = _step(problem, delta, f, grad)
                loss, _, logits = problem.evaluate(delta, need_grad=False, objective=objective)
                dice = case_dice(logits, problem.target)
                norm = delta.reshape(n, -1).double().abs().amax(dim=1)
                broken = todo & (dice <= thr)
                better = broken & (norm < best_norm)
                best[better] = delta[better]
                best_norm = torch.where(better, norm, best_norm)
                delta[broken] = delta[broken] * BETA  # back towards the clean input
                problem.record(r, it + 1, loss, dice, target_rank=rank, norm=norm)
    ok = best_norm <= eps
    answer = torch.where(ok.reshape(-1, *[1] * (x.ndim - 1)), best, zero)
    problem.project_(answer)
    loss, _, logits = problem.evaluate(answer, need_grad=False)
    dice = case_dice(logits, problem.target)
    problem.record(-1, 1, loss, dice, point="answer")
    problem.info.update(
        {
            "min_norm": best_norm.tolist(),
            "success_threshold": thr.tolist(),
            "success_within_eps": ok.tolist(),
            "clean_dice": clean_dice.tolist(),
            "target_ranks": ranks,
            "runs": runs,
        }
    )
    counts = (problem.history, problem.n_forward, problem.n_backward, dict(problem.info))
    return AttackOutput(answer, logits, dice, *counts)
