"""The configuration of one attack (:class:`AttackConfig`), checked against the registry, and
why an attack cannot run on a model (:func:`not_applicable`)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

from napari_segeval._errors import SegEvalError
from napari_segeval.attacks.budget import NORMS
from napari_segeval.attacks.losses import FORWARD_ONLY_LOSSES, LOSSES, WEIGHTINGS
from napari_segeval.attacks.registry import ATTACKS, Attack

#: Every ``schedule`` value of some attack.
SCHEDULES: tuple[str, ...] = tuple(dict.fromkeys(v for a in ATTACKS.values() for v in a.schedules))
SELECTS = ("dice", "loss")


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
        A name of :data:`~napari_segeval.attacks.registry.ATTACKS`.
    eps : float
        Radius in normalized units.
    norm : {"linf", "l2"}
        Norm of the ball (per case, over all input elements). Square and FAB: L-inf only.
    steps : int
        Iterations (PGD/APGD/FAB), queries (Square); ignored by FGSM and noise.
    step_size : float or None
        Default: ``2.5 * eps / steps`` (PGD), ``2 * eps`` (APGD), ``eps`` (FGSM).
    loss : {"ce", "dice", "dlr", "hard-dice"}
        Loss maximized by FGSM/PGD/Square (APGD fixes it; ``hard-dice``: Square only).
    random_start : bool
        Start from a uniform point of the ball (PGD, APGD).
    restarts : int
        Independent runs; the kept iterate is chosen over all of them.
    schedule : str or None
        PGD: ``constant``, ``cosine``, ``step`` (halve at 50% and 75%); APGD: ``paper``
        or ``rog``; Square: ``rescaled`` or ``absolute``. None: the attack's default.
    weighting : {None, "segpgd", "cospgd"}
        Per-voxel loss weighting (PGD with ``ce`` or ``dlr``).
    clamp : (float, float), sequence of (float, float), or None
        Valid range of the preprocessed input: one ``(lo, hi)``, or one per image channel.
    seed : int
        Seed of the random draws (a CPU generator: same draws on any device).
    keep_best : bool
        Keep the best iterate per case by ``select`` (else the last one).
    select : {"dice", "loss"}
        ``dice``: the lowest-Dice iterate; ``loss`` (PGD only): the restart whose final
        iterate has the highest loss.
    robust_threshold : float or None
        A Dice: restarts run only for cases still strictly above it; Square stops and
        FAB succeeds at or below it (FAB's default: half the case's clean Dice).
    p_init : float
        Square: initial fraction of the input covered by one square.
    target_ranks : int or None
        FAB: how many target ranks per voxel (2nd, 3rd, ... class; default all ``C - 1``).
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
        spec = ATTACKS.get(self.attack)
        if spec is None:
            raise ValueError(f"unknown attack {self.attack!r}: use one of {', '.join(ATTACKS)}")
        self._check_budget(spec)
        self.loss = self.loss if spec.loss is None else spec.loss
        if self.loss in FORWARD_ONLY_LOSSES and not spec.gradient_free:
            free = ", ".join(name for name, a in ATTACKS.items() if a.gradient_free)
            raise ValueError(f"loss {self.loss!r} has no gradient: only {free} takes it")
        if self.loss not in LOSSES + FORWARD_ONLY_LOSSES:
            raise ValueError(
                f"unknown loss {self.loss!r}: use one of {', '.join(LOSSES + FORWARD_ONLY_LOSSES)}"
            )
        if self.weighting not in WEIGHTINGS:
            raise ValueError(
                f"weighting must be None, 'segpgd' or 'cospgd', got {self.weighting!r}"
            )
        if self.weighting is not None and self.loss == "dice":
            raise ValueError("per-voxel weighting needs a per-voxel loss ('ce' or 'dlr')")
        if self.schedule is None:
            self.schedule = spec.schedules[0]
        if self.schedule not in spec.schedules:
            if self.schedule in SCHEDULES:
                raise ValueError(
                    f"schedule {self.schedule!r} does not apply to {self.attack} "
                    f"(use one of {spec.schedules})"
                )
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.select not in SELECTS:
            raise ValueError(f"select must be one of {SELECTS}, got {self.select!r}")
        if self.select == "loss" and not spec.loss_select:
            raise ValueError("select='loss' (keep the highest-loss restart) is a PGD option")
        if self.robust_threshold is not None:
            self.robust_threshold = float(self.robust_threshold)
        if not 0 < self.p_init <= 1:
            raise ValueError(f"p_init must be in (0, 1], got {self.p_init}")
        if self.target_ranks is not None and int(self.target_ranks) < 1:
            raise ValueError(f"target_ranks must be >= 1, got {self.target_ranks}")
        if self.clamp is not None:
            self.clamp = _clamp_ranges(self.clamp)

    def _check_budget(self, spec: Attack) -> None:
        """The norm, epsilon, step counts and step size."""
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if spec.linf_only and self.norm != "linf":
            raise ValueError(f"{self.attack} is implemented for the L-inf norm only")
        if not (math.isfinite(self.eps) and self.eps >= 0):
            raise ValueError(f"eps must be finite and >= 0, got {self.eps}")
        if self.steps < 1 or self.restarts < 1:
            raise ValueError("steps and restarts must be >= 1")
        if self.step_size is not None and not (
            math.isfinite(self.step_size) and self.step_size > 0
        ):
            raise ValueError(f"step_size must be finite and > 0, got {self.step_size}")

    @property
    def effective_step_size(self) -> float:
        """The step size actually used (the default when ``step_size`` is None)."""
        if self.step_size is not None:
            return float(self.step_size)
        return ATTACKS[self.attack].step_size(self)

    def to_dict(self) -> dict:
        """Plain dict, with the effective step size."""
        return {
            **asdict(self),
            "clamp": json.loads(json.dumps(self.clamp)),  # nested lists
            "step_size": self.effective_step_size,
        }


class AttackNotApplicable(SegEvalError, ValueError):
    """An attack cannot run on this model (e.g. APGD-DLR on fewer than 3 classes)."""


def not_applicable(config: AttackConfig, num_classes: int) -> str | None:
    """Why ``config`` cannot attack a model with ``num_classes`` classes, or None.

    The DLR margin needs the third-largest logit, so APGD-DLR (and any DLR loss) needs at least 3
    classes (background included); ROG runs APGD-DLR only on tasks with more than 2 classes.

    Examples
    --------
    >>> not_applicable(AttackConfig("apgd-dlr", eps=0.1), 2)
    'apgd-dlr needs at least 3 classes (its DLR loss uses the third-largest logit); the model has 2'
    >>> not_applicable(AttackConfig("apgd-dlr", eps=0.1), 3) is None
    True
    """
    if config.loss == "dlr" and num_classes < 3:
        return (
            f"{config.attack} needs at least 3 classes (its DLR loss uses the "
            f"third-largest logit); the model has {num_classes}"
        )
    need = ATTACKS[config.attack].min_classes
    if num_classes < need:
        return f"{config.attack} needs at least {need} classes; the model has {num_classes}"
    return None


__all__ = [
    "SCHEDULES",
    "SELECTS",
    "AttackConfig",
    "AttackNotApplicable",
    "not_applicable",
]
