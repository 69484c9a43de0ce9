"""FGSM, PGD (Madry et al. 2018) and noise baselines; the algorithm: docs/api/attacks.md."""

from __future__ import annotations

import math

from napari_segeval.attacks._problem import AttackOutput, Problem, ascent_


def _schedule_factor(schedule: str, step: int, steps: int) -> float:
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * step / steps))
    if schedule == "step":
        return 1.0 if step < steps // 2 else (0.5 if step < (3 * steps) // 4 else 0.25)
    return 1.0


def _ascend(problem: Problem, restarts: int, steps: int, start: str | None, weighted: bool):
    """FGSM, PGD and noise: per restart a start (or zero), ``steps`` ascents, the end evaluated."""
    import torch

    cfg = problem.cfg
    every = cfg.select == "dice"  # "loss" compares restarts: only the clean input gates (ROG)
    for r in problem.restarts(restarts, gate_every=every):
        delta = torch.zeros_like(problem.x) if start is None else problem.random_point(start)
        for t in range(steps):
            wstep = t if weighted else None
            loss, grad, logits = problem.evaluate(delta, need_grad=True, weighting_step=wstep)
            problem.record(r, t, loss, problem.track(delta, logits, loss, candidate=every))
            step = cfg.effective_step_size * _schedule_factor(cfg.schedule, t, steps)
            with torch.no_grad():
                problem.project_(ascent_(delta, grad, step, cfg.norm))
        loss, _, logits = problem.evaluate(delta, need_grad=False)
        problem.record(r, steps, loss, problem.track(delta, logits, loss))
    return problem.output()


def fgsm(problem: Problem) -> AttackOutput:
    """One signed (L-inf) or normalized (L2) gradient step of size ``step_size``."""
    return _ascend(problem, 1, 1, None, weighted=False)


def pgd(problem: Problem) -> AttackOutput:
    """Projected gradient ascent with random start, step schedule and restarts.

    ``select="loss"``: only the final iterate of each restart is a candidate and the one with the
    highest loss is kept (ROG's ``attack_pgd``); with a ``robust_threshold`` only the clean input
    gates (a case not robust there is not attacked) and every restart runs, as in ROG, since a later
    restart may replace a breaking iterate by a higher-loss one.
    """
    cfg = problem.cfg
    start = "uniform" if cfg.random_start else None
    return _ascend(problem, cfg.restarts, cfg.steps, start, cfg.weighting is not None)


def noise(problem: Problem, kind: str) -> AttackOutput:
    """Random noise of the same budget: uniform in the ball, or Gaussian projected onto it."""
    return _ascend(problem, problem.cfg.restarts, 0, kind, weighted=False)
