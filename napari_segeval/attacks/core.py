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

torch is imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from napari_segeval._errors import SegEvalError
from napari_segeval.attacks._problem import AttackOutput, Problem, per_case_norm, project_
from napari_segeval.attacks.budget import NORMS
from napari_segeval.attacks.losses import FORWARD_ONLY_LOSSES, LOSSES, WEIGHTINGS

if TYPE_CHECKING:  # pragma: no cover
    import torch

ATTACKS = ("fgsm", "pgd", "apgd-ce", "apgd-dlr", "square", "fab", "noise-gaussian",
           "noise-uniform")
#: ``schedule`` values per attack family (the first is the default).
SCHEDULES_BY_ATTACK = {
    "pgd": ("constant", "cosine", "step"),      # step size over the iterations
    "apgd": ("paper", "rog"),                   # where the step size is checked
    "square": ("rescaled", "absolute"),         # square size p over the queries
}
SCHEDULES = tuple(v for vals in SCHEDULES_BY_ATTACK.values() for v in vals)
SELECTS = ("dice", "loss")
LINF_ONLY = ("square", "fab")
Forward = Callable[["torch.Tensor"], "torch.Tensor"]


def _family(attack: str) -> str:
    return "apgd" if attack.startswith("apgd") else attack


def _clamp_ranges(clamp: Any) -> tuple:
    """``(lo, hi)`` floats, or a tuple of them (one per channel); an empty range raises."""
    per_channel = isinstance(clamp[0], (list, tuple))
    pairs = [(float(a), float(b)) for a, b in (clamp if per_channel else [clamp])]
    for pair in pairs:
        if pair[0] > pair[1]:
            raise ValueError(f"clamp range {pair} is empty")
    return tuple(pairs) if per_channel else pairs[0]


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
        Norm of the ball (per case, over all input elements). Square and FAB: L-inf only.
    steps : int
        Iterations (PGD/APGD/FAB), queries (Square); ignored by FGSM and noise.
    step_size : float or None
        Default: ``2.5 * eps / steps`` (PGD), ``2 * eps`` (APGD), ``eps`` (FGSM).
        ROG's PGD uses ``eps / 3``.
    loss : {"ce", "dice", "dlr", "hard-dice"}
        Loss maximized by FGSM/PGD/Square (APGD-CE and APGD-DLR fix it);
        ``hard-dice`` (``1 -`` hard Dice, no gradient) is for Square only.
    random_start : bool
        Start from a uniform point of the ball (PGD, APGD).
    restarts : int
        Independent runs; the kept iterate is chosen over all of them.
    schedule : str or None
        PGD: step-size schedule ``constant`` (default), ``cosine``, ``step`` (halve
        at 50% and 75% of the steps). APGD: checkpoints ``paper`` (default) or
        ``rog``. Square: square-size schedule ``rescaled`` (default) or
        ``absolute``. None picks the attack's default.
    weighting : {None, "segpgd", "cospgd"}
        Per-voxel loss weighting (PGD with ``ce`` or ``dlr``).
    clamp : (float, float), sequence of (float, float), or None
        Valid range of the preprocessed input to keep perturbed inputs in: one
        ``(lo, hi)`` for every element, or one per image channel (along the
        attack's channel axis: multi-channel MR, each channel z-scored with its
        own statistics).
    seed : int
        Seed of the random start / noise / squares (a CPU generator: same draws on any device).
    keep_best : bool
        Keep the best iterate per case by ``select`` (else the last one).
    select : {"dice", "loss"}
        ``dice``: the iterate with the lowest Dice (every evaluated iterate).
        ``loss`` (PGD only): the restart whose final iterate has the highest loss.
    robust_threshold : float or None
        A Dice (mean foreground Dice vs the target on the model grid): when set,
        the clean input is evaluated first and an attack (restart) runs only for
        cases whose Dice is still strictly above it; Square stops querying and
        FAB counts success at or below it (FAB's default: half the case's clean Dice).
    p_init : float
        Square: initial fraction of the input covered by one square.
    target_ranks : int or None
        FAB: how many target classes per voxel, the 2nd, 3rd, ... most likely
        class at the clean input (default: all ``C - 1``).
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
    schedule: str | None = None
    weighting: str | None = None
    clamp: tuple | None = None
    seed: int = 0
    keep_best: bool = True
    select: str = "dice"
    robust_threshold: float | None = None
    p_init: float = 0.8
    target_ranks: int | None = None
    sigma: float | None = None

    def __post_init__(self) -> None:
        if self.attack not in ATTACKS:
            raise ValueError(f"unknown attack {self.attack!r}: use one of {', '.join(ATTACKS)}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if self.attack in LINF_ONLY and self.norm != "linf":
            raise ValueError(f"{self.attack} is implemented for the L-inf norm only")
        if not (math.isfinite(self.eps) and self.eps >= 0):
            raise ValueError(f"eps must be finite and >= 0, got {self.eps}")
        if self.steps < 1 or self.restarts < 1:
            raise ValueError("steps and restarts must be >= 1")
        if self.attack == "apgd-ce":
            self.loss = "ce"
        elif self.attack == "apgd-dlr":
            self.loss = "dlr"
        if self.loss in FORWARD_ONLY_LOSSES and self.attack != "square":
            raise ValueError(f"loss {self.loss!r} has no gradient: only square takes it")
        if self.loss not in LOSSES + FORWARD_ONLY_LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}: use one of "
                             f"{', '.join(LOSSES + FORWARD_ONLY_LOSSES)}")
        self._check_schedule()
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be None, 'segpgd' or 'cospgd', "
                             f"got {self.weighting!r}")
        if self.weighting is not None and self.loss == "dice":
            raise ValueError("per-voxel weighting needs a per-voxel loss ('ce' or 'dlr')")
        if self.select not in SELECTS:
            raise ValueError(f"select must be one of {SELECTS}, got {self.select!r}")
        if self.select == "loss" and self.attack != "pgd":
            raise ValueError("select='loss' (keep the highest-loss restart) is a PGD option")
        if self.robust_threshold is not None:
            self.robust_threshold = float(self.robust_threshold)
        if not 0 < self.p_init <= 1:
            raise ValueError(f"p_init must be in (0, 1], got {self.p_init}")
        if self.target_ranks is not None and int(self.target_ranks) < 1:
            raise ValueError(f"target_ranks must be >= 1, got {self.target_ranks}")
        if self.clamp is not None:
            self.clamp = _clamp_ranges(self.clamp)

    def _check_schedule(self) -> None:
        allowed = SCHEDULES_BY_ATTACK.get(_family(self.attack), ("constant",))
        if self.schedule is None:
            self.schedule = allowed[0]
        if self.schedule not in allowed:
            if self.schedule in SCHEDULES:
                raise ValueError(f"schedule {self.schedule!r} does not apply to {self.attack} "
                                 f"(use one of {allowed})")
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")

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
        d["clamp"] = (None if self.clamp is None else
                      [list(c) for c in self.clamp] if isinstance(self.clamp[0], tuple)
                      else list(self.clamp))
        d["step_size"] = self.effective_step_size
        return d


class AttackNotApplicable(SegEvalError, ValueError):
    """An attack cannot run on this model (e.g. APGD-DLR on fewer than 3 classes)."""


def not_applicable(config: AttackConfig, num_classes: int) -> str | None:
    """Why ``config`` cannot attack a model with ``num_classes`` classes, or None.

    The DLR margin needs the third-largest logit, so APGD-DLR (and any DLR loss)
    needs at least 3 classes (background included); ROG runs APGD-DLR only on
    tasks with more than 2 classes.

    Examples
    --------
    >>> not_applicable(AttackConfig("apgd-dlr", eps=0.1), 2)
    'apgd-dlr needs at least 3 classes (its DLR loss uses the third-largest logit); the model has 2'
    >>> not_applicable(AttackConfig("apgd-dlr", eps=0.1), 3) is None
    True
    """
    if config.loss == "dlr" and num_classes < 3:
        return (f"{config.attack} needs at least 3 classes (its DLR loss uses the "
                f"third-largest logit); the model has {num_classes}")
    if config.attack == "fab" and num_classes < 2:
        return f"fab needs at least 2 classes; the model has {num_classes}"
    return None


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
    clean = 1 if cfg.robust_threshold is not None else 0
    if cfg.attack == "fgsm":
        return 2 + clean
    if cfg.attack.startswith("noise"):
        return cfg.restarts + clean
    if cfg.attack == "fab":
        from napari_segeval.attacks.fab import fab_evaluations

        return fab_evaluations(cfg, num_classes)
    return cfg.restarts * (cfg.steps + 1) + clean


def run_attack(forward: Forward, x: torch.Tensor, target: torch.Tensor, config: AttackConfig,
               *, progress: Callable[[int, int], None] | None = None,
               cancel: Any = None, channel_axis: int | None = 1) -> AttackOutput:
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
    >>> net = torch.nn.Conv1d(1, 2, 3, padding=1)
    >>> x = torch.randn(2, 1, 16, generator=torch.Generator().manual_seed(0))
    >>> target = net(x).argmax(1).detach()
    >>> out = run_attack(net, x, target, AttackConfig("pgd", eps=0.5, steps=5))
    >>> bool((per_case_norm(out.delta, "linf") <= 0.5).all()), out.n_backward
    (True, 5)
    """
    from napari_segeval.attacks.apgd import apgd
    from napari_segeval.attacks.fab import fab
    from napari_segeval.attacks.iterative import fgsm, noise, pgd
    from napari_segeval.attacks.square import square

    problem = Problem(forward, x, target.long(), config, progress, cancel,
                      total_evaluations(config), channel_axis=channel_axis)
    if config.attack == "fgsm":
        return fgsm(problem)
    if config.attack == "pgd":
        return pgd(problem)
    if config.attack.startswith("apgd"):
        return apgd(problem)
    if config.attack == "square":
        return square(problem)
    if config.attack == "fab":
        return fab(problem)
    return noise(problem, config.attack.split("-", 1)[1])


__all__ = [
    "ATTACKS",
    "SCHEDULES",
    "SCHEDULES_BY_ATTACK",
    "SELECTS",
    "AttackConfig",
    "AttackNotApplicable",
    "AttackOutput",
    "Forward",
    "not_applicable",
    "per_case_norm",
    "project_",
    "run_attack",
    "total_evaluations",
]
