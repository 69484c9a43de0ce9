"""FGSM, PGD and noise baselines on a :class:`~napari_segeval.attacks._problem.Problem`.

PGD: ``delta <- P(delta + step * sign(grad))`` (unit L2 direction for the L2 norm),
from a uniform random point of the ball (or zero), with a step-size schedule and
restarts. Each step is one forward and one backward pass; the Dice of the
iterate comes from that forward's logits; the final iterate costs one forward.
"""

from __future__ import annotations

import math

from napari_segeval.attacks._problem import AttackOutput, Problem, ascent_, record_step


def _schedule_factor(schedule: str, step: int, steps: int) -> float:
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * step / steps))
    if schedule == "step":
        return 1.0 if step < steps // 2 else (0.5 if step < (3 * steps) // 4 else 0.25)
    return 1.0


def fgsm(problem: Problem) -> AttackOutput:
    """One signed (L-inf) or normalized (L2) gradient step of size ``step_size``."""
    import torch

    history: list = []
    delta = torch.zeros_like(problem.x)
    loss, grad, logits = problem.evaluate(delta, need_grad=True)
    record_step(history, 0, 0, loss, problem.track(delta, logits))
    problem.project_(ascent_(delta, grad, problem.cfg.effective_step_size, problem.cfg.norm))
    loss, _, logits = problem.evaluate(delta, need_grad=False)
    record_step(history, 0, 1, loss, problem.track(delta, logits))
    return problem.output(history)


def pgd(problem: Problem) -> AttackOutput:
    """Projected gradient ascent with random start, step schedule and restarts."""
    import torch

    cfg, history = problem.cfg, []
    for r in range(cfg.restarts):
        delta = problem.random_point() if cfg.random_start else torch.zeros_like(problem.x)
        for t in range(cfg.steps):
            wstep = t if cfg.weighting is not None else None
            loss, grad, logits = problem.evaluate(delta, need_grad=True, weighting_step=wstep)
            record_step(history, r, t, loss, problem.track(delta, logits))
            step = cfg.effective_step_size * _schedule_factor(cfg.schedule, t, cfg.steps)
            with torch.no_grad():
                problem.project_(ascent_(delta, grad, step, cfg.norm))
        loss, _, logits = problem.evaluate(delta, need_grad=False)
        record_step(history, r, cfg.steps, loss, problem.track(delta, logits))
    return problem.output(history)


def noise(problem: Problem, kind: str) -> AttackOutput:
    """Random noise of the same budget: uniform in the ball, or Gaussian projected onto it."""
    history: list = []
    for r in range(problem.cfg.restarts):
        delta = problem.random_point(kind)
        loss, _, logits = problem.evaluate(delta, need_grad=False)
        record_step(history, r, 0, loss, problem.track(delta, logits))
    return problem.output(history)
