"""The state shared by every attack loop: the perturbation ball, evaluation, best iterate.

:class:`Problem` holds one run's input, target and configuration; it projects
onto the epsilon ball (and the optional valid input range), draws random
starts, evaluates the loss, gradient and logits at ``x + delta`` (counting
passes, reporting progress, honouring cancel) and keeps the lowest-Dice iterate
per case. The attack loops (:mod:`.iterative`, :mod:`.apgd`) are written on it;
:mod:`.core` builds it from an :class:`~napari_segeval.attacks.core.AttackConfig`.

torch is imported inside the functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from napari_segeval._cancel import check_cancel
from napari_segeval.attacks.losses import case_dice, get_loss, voxel_weights

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from napari_segeval.attacks.core import AttackConfig, Forward


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


class Problem:
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


def record_step(history: list, restart: int, step: int, loss: Any, dice: Any, **extra: Any) -> None:
    row = {"restart": restart, "step": step, "loss": loss.tolist(), "dice": dice.tolist()}
    row.update({k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in extra.items()})
    history.append(row)


def ascent_(delta: torch.Tensor, grad: torch.Tensor, step: Any, norm: str) -> torch.Tensor:
    """``delta += step * direction(grad)`` in place (sign for L-inf, unit L2 direction)."""
    if norm == "linf":
        direction = grad.sign()
    else:
        direction = grad / _bshape(per_case_norm(grad, "l2").clamp(min=1e-30), grad)
    if isinstance(step, float):
        return delta.add_(direction, alpha=step)
    return delta.addcmul_(_bshape(step, delta), direction)


__all__ = ["AttackOutput", "Problem", "ascent_", "per_case_norm", "project_", "record_step"]
