"""Model-agnostic attacks on a differentiable ``forward(x) -> logits (N, C, *spatial)``.

The attacks perturb ``x`` (any shape with the case axis first) inside an
epsilon ball of the L-inf or L2 norm, measured per case over every other axis,
in the model's normalized units (see :mod:`napari_segeval.attacks.budget`).
Inputs are never clamped to ``[0, 1]``; with ``clamp=(lo, hi)`` the perturbed
input is kept in the range the preprocessing can produce (a voxel whose clean
value lies outside it may keep that value).

Cost: every PGD/APGD step is exactly one forward and one backward pass; the
Dice of the current iterate is computed from that forward's logits before the
update, and one extra forward (no backward) evaluates the final iterate.
Square (:mod:`.square`) makes forward passes only; FAB (:mod:`.fab`) one
forward+backward and one forward per iteration. The iterate with the lowest
Dice per case is returned (``keep_best``), unless ``select="loss"`` (PGD: the
restart whose final iterate has the highest loss, as ROG's ``attack_pgd``) or
the attack defines its own answer (FAB: the smallest successful perturbation).

Options for the ``rog`` preset of ``msd-robust`` (Daza et al. 2021 and their
code, BCV-Uniandes/ROG): ``schedule="rog"`` (APGD checkpoints of their code,
:func:`~napari_segeval.attacks.apgd.apgd_checkpoints`), ``select="loss"`` with
``step_size=eps/3`` (their PGD), ``robust_threshold`` (attack, and restart, only
cases still robust; FAB's and Square's success criterion), ``loss="hard-dice"``
and ``schedule="absolute"`` (their Square).

The attacks themselves are entries of the registry
(:data:`~napari_segeval.attacks.registry.ATTACKS`: name -> loop and evaluation
count); their options are checked by
:class:`~napari_segeval.attacks.config.AttackConfig`. This module only
dispatches: :func:`run_attack` builds the shared
:class:`~napari_segeval.attacks._problem.Problem` and runs the entry's loop.

torch is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from napari_segeval.attacks._problem import AttackOutput, Forward, Problem
from napari_segeval.attacks.config import AttackConfig
from napari_segeval.attacks.registry import ATTACKS

if TYPE_CHECKING:  # pragma: no cover
    import torch


def total_evaluations(cfg: AttackConfig, num_classes: int | None = None) -> int:
    """Forward passes an attack makes (the ``total`` of its progress reports).

    Examples
    --------
    >>> total_evaluations(AttackConfig("pgd", eps=0.1, steps=10, restarts=2))
    22
    >>> total_evaluations(AttackConfig("fab", eps=0.1, steps=5), num_classes=3)
    22

    With a ``robust_threshold`` the clean input costs one more, and gating may
    stop the attack before the total.
    """
    return ATTACKS[cfg.attack].evaluations(cfg, num_classes)


def run_attack(
    forward: Forward,
    x: torch.Tensor,
    target: torch.Tensor,
    config: AttackConfig,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
    channel_axis: int | None = 1,
) -> AttackOutput:
    """Attack ``forward`` at ``x`` so that its prediction moves away from ``target``.

    Parameters
    ----------
    forward : callable
        ``forward(x) -> logits (N, C, *spatial)``, differentiable.
    x : torch.Tensor
        Clean input, case axis first, normalized units.
    target : torch.Tensor
        ``(N, *spatial)`` class indices (reference labels or the clean prediction).
    config : AttackConfig
        The attack and its budget.
    progress : callable, optional
        ``progress(done_evaluations, total)`` after each forward pass.
    cancel : threading.Event, optional
        Checked before each forward pass (raises ``Cancelled``).
    channel_axis : int or None
        Axis of ``x`` holding image channels (Square draws one sign per channel
        and squares over the other axes); None when every axis after the case
        axis is spatial.

    Returns
    -------
    AttackOutput

    Examples
    --------
    >>> import torch
    >>> from napari_segeval.attacks._problem import per_case_norm
    >>> net = torch.nn.Conv1d(1, 2, 3, padding=1)
    >>> x = torch.randn(2, 1, 16, generator=torch.Generator().manual_seed(0))
    >>> target = net(x).argmax(1).detach()
    >>> out = run_attack(net, x, target, AttackConfig("pgd", eps=0.5, steps=5))
    >>> bool((per_case_norm(out.delta, "linf") <= 0.5).all()), out.n_backward
    (True, 5)
    """
    problem = Problem(
        forward,
        x,
        target.long(),
        config,
        progress,
        cancel,
        total_evaluations(config),
        channel_axis=channel_axis,
    )
    return ATTACKS[config.attack].run(problem)


__all__ = ["run_attack", "total_evaluations"]
