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
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from napari_segeval._cancel import check_cancel
from napari_segeval.attacks.budget import NORMS
from napari_segeval.attacks.losses import LOSSES, WEIGHTINGS, case_dice, get_loss, voxel_weights

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


@dataclass
class AttackOutput:
    """What an attack on a batch of cases returns (tensors detached).

    Attributes
    ----------
    delta : torch.Tensor
        The perturbation (shape of ``x``), inside the ball.
    logits : torch.Tensor
        Logits of ``x + delta``.
    dice : torch.Tensor
        ``(N,)`` mean foreground Dice of ``x + delta`` against the target.
    history : list of dict
        Per evaluation: ``restart``, ``step``, ``loss`` and ``dice`` (lists per
        case), and for APGD the ``step_size`` per case.
    n_forward, n_backward : int
        Network passes used.
    """

    delta: Any
    logits: Any
    dice: Any
    history: list = field(default_factory=list)
    n_forward: int = 0
    n_backward: int = 0


def per_case_norm(delta: torch.Tensor, norm: str) -> torch.Tensor:
    """``(N,)`` L-inf or L2 norm of each case's perturbation.

    Examples
    --------
    >>> import torch
    >>> per_case_norm(torch.tensor([[3.0, -4.0]]), "l2").tolist()
    [5.0]
    """
    flat = delta.reshape(delta.shape[0], -1)
    if norm == "linf":
        return flat.abs().amax(dim=1)
    return flat.float().norm(dim=1)


def _bshape(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.reshape(-1, *([1] * (like.ndim - 1)))


def project_(delta: torch.Tensor, eps: float, norm: str) -> torch.Tensor:
    """Project ``delta`` onto the ball of radius ``eps`` in place (per case)."""
    import torch

    if norm == "linf":
        bound = torch.tensor(eps, dtype=delta.dtype)
        if float(bound) > eps:  # eps rounded up in this dtype: use the value just below
            bound = torch.nextafter(bound, torch.zeros_like(bound))
        return delta.clamp_(-float(bound), float(bound))
    n = per_case_norm(delta, "l2")
    # shrink a hair more than needed so float rounding cannot leave the norm above eps
    scale = torch.where(n > eps, eps * (1 - 1e-6) / n.clamp(min=1e-30), torch.ones_like(n))
    return delta.mul_(_bshape(scale, delta))


class _Problem:
    """Shared state of one attack run: input, target, projection and evaluation."""

    def __init__(self, forward: Forward, x: torch.Tensor, target: torch.Tensor,
                 cfg: AttackConfig, progress: Any, cancel: Any, total: int) -> None:
        import torch

        self.forward, self.x, self.target, self.cfg = forward, x.detach(), target, cfg
        self.progress, self.cancel, self.total, self.done = progress, cancel, total, 0
        self.loss_fn = get_loss(cfg.loss)
        self.gen = torch.Generator().manual_seed(int(cfg.seed))
        self.lo = self.hi = None
        if cfg.clamp is not None:
            self.lo = torch.minimum(self.x, torch.full_like(self.x, cfg.clamp[0]))
            self.hi = torch.maximum(self.x, torch.full_like(self.x, cfg.clamp[1]))
        self.n_forward = self.n_backward = 0
        self.best_dice = self.best_delta = self.best_logits = None

    def project_(self, delta: torch.Tensor) -> torch.Tensor:
        if self.lo is not None:
            delta.add_(self.x).clamp_(min=self.lo, max=self.hi).sub_(self.x)
        return project_(delta, self.cfg.eps, self.cfg.norm)

    def random_point(self, kind: str = "uniform") -> torch.Tensor:
        import torch

        shape, eps = self.x.shape, self.cfg.eps
        if kind == "gaussian":
            sigma = self.cfg.sigma if self.cfg.sigma is not None else eps
            d = torch.randn(shape, generator=self.gen) * sigma
        elif self.cfg.norm == "linf":
            d = (torch.rand(shape, generator=self.gen) * 2 - 1) * eps
        else:
            d = torch.randn(shape, generator=self.gen)
            d = d / _bshape(per_case_norm(d, "l2").clamp(min=1e-30), d)
            dim = d[0].numel()
            r = torch.rand((shape[0],), generator=self.gen) ** (1.0 / dim) * eps
            d = d * _bshape(r, d)
        return self.project_(d.to(self.x.device, self.x.dtype))

    def evaluate(self, delta: torch.Tensor, need_grad: bool, weighting_step: int | None = None):
        """Loss ``(N,)``, gradient w.r.t. delta (or None) and detached logits at x + delta."""
        import torch

        check_cancel(self.cancel, f"{self.cfg.attack} attack")
        grad = None
        if need_grad:
            d = delta.detach().requires_grad_(True)
            with torch.enable_grad():
                logits = self.forward(self.x + d)
                w = None
                if weighting_step is not None:
                    w = voxel_weights(self.cfg.weighting, logits, self.target,
                                      weighting_step, self.cfg.steps)
                loss = self.loss_fn(logits, self.target, w)
                (grad,) = torch.autograd.grad(loss.sum(), d)
            self.n_backward += 1
        else:
            with torch.no_grad():
                logits = self.forward(self.x + delta)
                loss = self.loss_fn(logits, self.target)
        self.n_forward += 1
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)
        return loss.detach(), grad, logits.detach()

    def track(self, delta: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """Dice of the current iterate; keep it per case when it is the lowest so far."""
        import torch

        dice = case_dice(logits, self.target)
        if self.best_dice is None:
            self.best_dice, self.best_delta = dice.clone(), delta.clone()
            self.best_logits = logits.clone()
        elif self.cfg.keep_best:
            better = dice <= self.best_dice
            if bool(better.any()):
                self.best_dice = torch.where(better, dice, self.best_dice)
                self.best_delta[better] = delta[better]
                self.best_logits[better] = logits[better]
        else:
            self.best_dice, self.best_delta, self.best_logits = dice, delta.clone(), logits
        return dice

    def output(self, history: list) -> AttackOutput:
        return AttackOutput(self.best_delta, self.best_logits, self.best_dice, history,
                            self.n_forward, self.n_backward)


def _record(history: list, restart: int, step: int, loss: Any, dice: Any, **extra: Any) -> None:
    row = {"restart": restart, "step": step, "loss": loss.tolist(), "dice": dice.tolist()}
    row.update({k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in extra.items()})
    history.append(row)


def _ascent_(delta: torch.Tensor, grad: torch.Tensor, step: Any, norm: str) -> torch.Tensor:
    """``delta += step * direction(grad)`` in place (sign for L-inf, unit L2 direction)."""
    if norm == "linf":
        direction = grad.sign()
    else:
        direction = grad / _bshape(per_case_norm(grad, "l2").clamp(min=1e-30), grad)
    if isinstance(step, float):
        return delta.add_(direction, alpha=step)
    return delta.addcmul_(_bshape(step, delta), direction)


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

    problem = _Problem(forward, x, target.long(), config, progress, cancel,
                       total_evaluations(config))
    if config.attack == "fgsm":
        return fgsm(problem)
    if config.attack == "pgd":
        return pgd(problem)
    if config.attack.startswith("apgd"):
        return apgd(problem)
    return noise(problem, config.attack.split("-", 1)[1])
