"""The attack registry :data:`ATTACKS`: every attack by name, with its loop, cost and options
(checked by :class:`~.config.AttackConfig`, dispatched by :func:`~.core.run_attack`); no torch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from napari_segeval.attacks._problem import AttackOutput, Problem
from napari_segeval.attacks.apgd import apgd
from napari_segeval.attacks.fab import fab, fab_evaluations
from napari_segeval.attacks.iterative import fgsm, noise, pgd
from napari_segeval.attacks.square import square


def _iterations(cfg: Any, num_classes: int | None = None) -> int:
    """``steps`` evaluations and the final iterate per restart, plus the gated clean input's."""
    return cfg.restarts * (cfg.steps + 1) + (cfg.robust_threshold is not None)


def _draws(cfg: Any, num_classes: int | None = None) -> int:
    """Noise: one evaluation per draw (restart), plus the gated clean input's."""
    return cfg.restarts + (cfg.robust_threshold is not None)


@dataclass(frozen=True)
class Attack:
    """One attack of the registry.

    Attributes
    ----------
    run : callable
        ``run(problem) -> AttackOutput``: the attack loop.
    evaluations : callable
        ``evaluations(config, num_classes) -> int``: forward passes it makes (the
        ``total`` of its progress reports; gating may stop it earlier).
    summary : str
        One line for help texts.
    schedules : tuple of str
        The values of ``AttackConfig.schedule`` it takes; the first is the default.
    loss : str or None
        The loss it fixes (APGD-CE: ``ce``, APGD-DLR: ``dlr``), None when the
        configuration's loss is used.
    step_size : callable
        ``step_size(config) -> float``: the default step size.
    linf_only : bool
        Implemented for the L-inf norm only.
    gradient_free : bool
        Needs forward passes only (the only kind that takes a loss without a gradient).
    loss_select : bool
        Takes ``select="loss"`` (keep the restart with the highest final loss).
    min_classes : int
        Fewest classes (background included) of a model it can attack.
    """

    run: Callable[[Problem], AttackOutput]
    evaluations: Callable[[Any, int | None], int]
    summary: str
    schedules: tuple[str, ...] = ("constant",)
    loss: str | None = None
    step_size: Callable[[Any], float] = lambda cfg: float(cfg.eps)
    linf_only: bool = False
    gradient_free: bool = False
    loss_select: bool = False
    min_classes: int = 1


def _apgd(loss: str, summary: str) -> Attack:
    """APGD on ``loss``: schedules ``paper`` and ``rog``, default step size 2 eps."""
    return Attack(apgd, _iterations, summary, ("paper", "rog"), loss, lambda cfg: 2.0 * cfg.eps)


#: Every attack by the name people type (order: help texts and the viewer's list).
ATTACKS: dict[str, Attack] = {
    "fgsm": Attack(  # the clean gradient and the stepped input
        fgsm,
        lambda cfg, _: 2 + (cfg.robust_threshold is not None),
        "one signed gradient step (FGSM; L2: normalized gradient)",
    ),
    "pgd": Attack(
        pgd,
        _iterations,
        "projected gradient ascent: random start, step schedule, restarts, SegPGD/CosPGD weighting",
        schedules=("constant", "cosine", "step"),
        step_size=lambda cfg: 2.5 * cfg.eps / cfg.steps,
        loss_select=True,
    ),
    "apgd-ce": _apgd("ce", "APGD on cross-entropy (adaptive step size)"),
    "apgd-dlr": _apgd("dlr", "APGD on the DLR margin (3 classes or more)"),
    "square": Attack(
        square,
        _iterations,
        "Square: random square updates, forward passes only (L-inf)",
        schedules=("rescaled", "absolute"),
        linf_only=True,
        gradient_free=True,
    ),
    "fab": Attack(
        fab,
        fab_evaluations,
        "FAB-T: targeted, smallest successful perturbation (L-inf)",
        linf_only=True,
        min_classes=2,
    ),
    "noise-gaussian": Attack(
        partial(noise, kind="gaussian"), _draws, "Gaussian noise projected onto the ball (baseline)"
    ),
    "noise-uniform": Attack(
        partial(noise, kind="uniform"), _draws, "uniform noise in the ball (baseline)"
    ),
}

__all__ = ["ATTACKS", "Attack"]
