"""Model-agnostic attacks: :func:`run_attack` dispatches to the registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from napari_segeval.attacks._problem import AttackOutput, Forward, Problem
from napari_segeval.attacks.config import AttackConfig
from napari_segeval.attacks.registry import ATTACKS

if TYPE_CHECKING:  # pragma: no cover
    import torch


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
        Axis of ``x`` holding image channels (Square draws one sign per channel);
        None when every axis after the case axis is spatial.

    Returns
    -------
    AttackOutput
    """
    attack = ATTACKS[config.attack]
    total = attack.evaluations(config, None)
    return attack.run(
        Problem(forward, x, target.long(), config, progress, cancel, total, channel_axis)
    )


__all__ = ["run_attack"]
