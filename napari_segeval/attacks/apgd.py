"""APGD (Croce & Hein, ICML 2020) for segmentation, from its definition (docs/api/attacks.md)."""

from __future__ import annotations

import math

from napari_segeval.attacks._problem import AttackOutput, Problem, ascent_

RHO = 0.75
ALPHA = 0.75


def apgd_checkpoints(n_iter: int, schedule: str = "paper") -> list[int]:
    """Iterations ``0 < w_j < n_iter`` (increasing) where APGD checks its step size.

    ``"paper"``: ``w_j = ceil(p_j N)``, ``p_0 = 0``, ``p_1 = 0.22``, ``p_{j+1} = p_j +
    max(p_j - p_{j-1} - 0.03, 0.06)``. ``"rog"``: the code ROG runs (``autoattack/autopgd.py``),
    first after ``k_1 = max(int(0.22 N), 1)``, then every ``k_{j+1} = max(k_j - max(int(0.03 N),
    1), max(int(0.06 N), 1))`` (int, not the issue's ceil: they differ at N = 50); only the
    positions follow the code (docs/protocols.md). A check at ``n_iter`` would change nothing.
    """
    if schedule == "rog":
        interval = max(int(0.22 * n_iter), 1)
        shrink, floor = max(int(0.03 * n_iter), 1), max(int(0.06 * n_iter), 1)
        out, at = [], interval
        while at < n_iter:
            out.append(at)
            interval = max(interval - shrink, floor)
            at += interval
        return out
    if schedule != "paper":
        raise ValueError(f"APGD schedule must be 'paper' or 'rog', got {schedule!r}")
    ps = [0.0, 0.22]
    while ps[-1] < 1.0:
        ps.append(ps[-1] + max(ps[-1] - ps[-2] - 0.03, 0.06))
    out = []
    for p in ps[1:]:
        w = math.ceil(round(p * n_iter, 9))
        if 0 < w < n_iter and (not out or w > out[-1]):
            out.append(w)
    return out


def apgd(problem: Problem) -> AttackOutput:
    """Run APGD (``problem.cfg.loss`` is ``ce`` or ``dlr``) with restarts."""
    import torch

    cfg = problem.cfg
    checkpoints = set(apgd_checkpoints(cfg.steps, cfg.schedule))
    n = problem.x.shape[0]
    for r in problem.restarts(cfg.restarts):
        delta = problem.random_point() if cfg.random_start else torch.zeros_like(problem.x)
        eta = torch.full((n,), cfg.effective_step_size, device=problem.x.device)
        loss, grad, logits = problem.evaluate(delta, need_grad=True)
        problem.record(r, 0, loss, problem.track(delta, logits), step_size=eta)
        best_loss, best_delta, best_grad = loss.clone(), delta.clone(), grad.clone()
        prev = delta.clone()
        successes = torch.zeros(n, device=loss.device)
        last_ck, best_at_ck = 0, best_loss.clone()
        reduced_at_ck = torch.zeros(n, dtype=torch.bool, device=loss.device)
        for k in range(cfg.steps):
            with torch.no_grad():
                z = problem.project_(ascent_(delta.clone(), grad, eta, cfg.norm))
                if k == 0:
                    new = z
                else:
                    new = delta + ALPHA * (z - delta) + (1 - ALPHA) * (delta - prev)
                    problem.project_(new)
                prev, delta = delta, new
            last = k == cfg.steps - 1
            new_loss, new_grad, logits = problem.evaluate(delta, need_grad=not last)
            dice = problem.track(delta, logits)
            successes += (new_loss > loss).float()
            loss = new_loss
            improved = loss > best_loss
            best_loss = torch.where(improved, loss, best_loss)
            best_delta[improved] = delta[improved]
            if not last:  # the last evaluation computes no gradient
                grad = new_grad
                best_grad[improved] = grad[improved]
            if k + 1 in checkpoints:
                cond1 = successes < RHO * (k + 1 - last_ck)
                cond2 = ~reduced_at_ck & (best_loss <= best_at_ck)
                reduce = cond1 | cond2
                eta = torch.where(reduce, eta / 2, eta)
                delta[reduce] = best_delta[reduce]
                prev[reduce] = best_delta[reduce]
                grad[reduce] = best_grad[reduce]
                loss = torch.where(reduce, best_loss, loss)
                reduced_at_ck, best_at_ck = reduce, best_loss.clone()
                successes.zero_()
                last_ck = k + 1
            problem.record(r, k + 1, new_loss, dice, step_size=eta)
    return problem.output()
