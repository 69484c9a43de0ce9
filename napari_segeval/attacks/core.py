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
The iterate with the lowest Dice per case is returned (``keep_best``).

torch is imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from napari_segeval.attacks._problem import AttackOutput, Problem, per_case_norm, project_
from napari_segeval.attacks.budget import NORMS
from napari_segeval.attacks.losses import LOSSES, WEIGHTINGS

if TYPE_CHECKING:  # pragma: no cover
    import torch

ATTACKS = ("fgsm", "pgd", "apgd-ce", "apgd-dlr", "noise-gaussian", "noise-uniform")
SCHEDULES = ("constant", "cosine", "step")
Forward = Callable[["torch.Tensor"], "torch.Tensor"]


@dataclass
class AttackConfig:
    """Parameters of one attack (all recorded with its results).

    Attributes
    ----------
    attack : str
        One of :data:`ATTACKS`.
    eps : float
        Radius in normalized units.
    norm : {"linf", "l2"}
        Norm of the ball (per case, over all input elements).
    steps : int
        Iterations (PGD/APGD); ignored by FGSM and noise.
    step_size : float or None
        Default: ``2.5 * eps / steps`` (PGD), ``2 * eps`` (APGD), ``eps`` (FGSM).
    loss : {"ce", "dice", "dlr"}
        Loss maximized by FGSM/PGD (APGD-CE and APGD-DLR fix it).
    random_start : bool
        Start from a uniform point of the ball (PGD, APGD).
    restarts : int
        Independent runs; the lowest-Dice iterate over all of them is kept.
    schedule : {"constant", "cosine", "step"}
        PGD step-size schedule (``step``: halve at 50% and 75% of the steps).
    weighting : {None, "segpgd", "cospgd"}
        Per-voxel loss weighting (PGD with ``ce`` or ``dlr``).
    clamp : (float, float) or None
        Valid range of the preprocessed input to keep perturbed inputs in.
    seed : int
        Seed of the random start / noise (a CPU generator: same draws on any device).
    keep_best : bool
        Return the iterate with the lowest Dice per case (else the last one).
    sigma : float or None
        Standard deviation of Gaussian noise before projection (default ``eps``).
    """

    attack: str = "pgd"
    eps: float = 0.05
    norm: str = "linf"
    steps: int = 10
    step_size: float | None = None
    loss: str = "ce"
    random_start: bool = True
    restarts: int = 1
    schedule: str = "constant"
    weighting: str | None = None
    clamp: tuple[float, float] | None = None
    seed: int = 0
    keep_best: bool = True
    sigma: float | None = None

    def __post_init__(self) -> None:
        if self.attack not in ATTACKS:
            raise ValueError(f"unknown attack {self.attack!r}: use one of {', '.join(ATTACKS)}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if not (math.isfinite(self.eps) and self.eps >= 0):
            raise ValueError(f"eps must be finite and >= 0, got {self.eps}")
        if self.steps < 1 or self.restarts < 1:
            raise ValueError("steps and restarts must be >= 1")
        if self.attack == "apgd-ce":
            self.loss = "ce"
        elif self.attack == "apgd-dlr":
            self.loss = "dlr"
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}: use one of {', '.join(LOSSES)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be None, 'segpgd' or 'cospgd', got {self.weighting!r}")
        if self.weighting is not None and self.loss == "dice":
            raise ValueError("per-voxel weighting needs a per-voxel loss ('ce' or 'dlr')")
        if self.clamp is not None:
            self.clamp = (float(self.clamp[0]), float(self.clamp[1]))
            if self.clamp[0] > self.clamp[1]:
                raise ValueError(f"clamp range {self.clamp} is empty")

    @property
    def effective_step_size(self) -> float:
        """The step size actually used (the default when ``step_size`` is None)."""
        if self.step_size is not None:
            return float(self.step_size)
        if self.attack.startswith("apgd"):
            return 2.0 * self.eps
        if self.attack == "pgd":
            return 2.5 * self.eps / self.steps
        return float(self.eps)

    def to_dict(self) -> dict:
        """Plain dict, with the effective step size."""
        d = asdict(self)
        d["clamp"] = list(self.clamp) if self.clamp is not None else None
        d["step_size"] = self.effective_step_size
        return d


def total_evaluations(cfg: AttackConfig) -> int:
    """Forward passes an attack makes (the ``total`` of its progress reports).

    Examples
    --------
    >>> total_evaluations(AttackConfig("pgd", eps=0.1, steps=10, restarts=2))
    22
    """
    if cfg.attack == "fgsm":
        return 2
    if cfg.attack.startswith("noise"):
        return cfg.restarts
    return cfg.restarts * (cfg.steps + 1)


def run_attack(forward: Forward, x: torch.Tensor, target: torch.Tensor, config: AttackConfig,
               *, progress: Callable[[int, int], None] | None = None,
               cancel: Any = None) -> AttackOutput:
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

    Returns
    -------
    AttackOutput

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Conv1d(1, 2, 3, padding=1)
    >>> x = torch.randn(2, 1, 16, generator=torch.Generator().manual_seed(0))
    >>> target = net(x).argmax(1).detach()
    >>> out = run_attack(net, x, target, AttackConfig("pgd", eps=0.5, steps=5))
    >>> bool((per_case_norm(out.delta, "linf") <= 0.5).all()), out.n_backward
    (True, 5)
    """
    from napari_segeval.attacks.apgd import apgd
    from napari_segeval.attacks.iterative import fgsm, noise, pgd

    problem = Problem(forward, x, target.long(), config, progress, cancel,
                       total_evaluations(config))
    if config.attack == "fgsm":
        return fgsm(problem)
    if config.attack == "pgd":
        return pgd(problem)
    if config.attack.startswith("apgd"):
        return apgd(problem)
    return noise(problem, config.attack.split("-", 1)[1])


__all__ = ["ATTACKS", "SCHEDULES", "AttackConfig", "AttackOutput", "Forward", "per_case_norm",
           "project_", "run_attack", "total_evaluations"]
