"""The state every attack loop shares (:class:`Problem`) and what an attack returns."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from napari_segeval._cancel import check_cancel
from napari_segeval.attacks.losses import case_dice, get_loss, voxel_weights

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: What an attack perturbs: ``forward(x) -> logits (N, C, *spatial)``, differentiable.
Forward = Callable[["torch.Tensor"], "torch.Tensor"]


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
        Per evaluation: ``restart``, ``step``, ``loss``, ``dice`` (per case) and the
        attack's own columns; ``restart=-1``: the clean input and FAB's answer.
    n_forward, n_backward : int
        Network passes used.
    info : dict
        Attack-specific results, JSON-ready (``restarts_run``, FAB's ``min_norm`` ...).
    """

    delta: Any
    logits: Any
    dice: Any
    history: list = field(default_factory=list)
    n_forward: int = 0
    n_backward: int = 0
    info: dict = field(default_factory=dict)


def per_case_norm(delta: torch.Tensor, norm: str) -> torch.Tensor:
    """``(N,)`` L-inf or L2 norm of each case's perturbation."""
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
    """Shared state of one attack run: input, target, projection, evaluation, kept iterate.

    ``cfg`` is an :class:`~.config.AttackConfig`, not imported: the configuration checks the
    registry, whose loops import this module, so there is no import circle even for types.
    """

    def __init__(
        self,
        forward: Forward,
        x: torch.Tensor,
        target: torch.Tensor,
        cfg: Any,
        progress: Any,
        cancel: Any,
        total: int,
        channel_axis: int | None = 1,
    ) -> None:
        import torch

        self.forward, self.x, self.target, self.cfg = forward, x.detach(), target, cfg
        self.progress, self.cancel, self.total, self.done = progress, cancel, total, 0
        self.loss_fn = get_loss(cfg.loss)
        self.gen = torch.Generator().manual_seed(int(cfg.seed))
        self.channel_axis = None if channel_axis is None else channel_axis % x.ndim
        self.lo = self.hi = None
        if cfg.clamp is not None:
            lo, hi = self._bounds(cfg.clamp)
            self.lo, self.hi = torch.minimum(self.x, lo), torch.maximum(self.x, hi)
        self.n_forward = self.n_backward = 0
        # the kept iterate, per case (None until the first evaluation)
        self.best_dice: torch.Tensor | None = None
        self.best_delta: torch.Tensor | None = None
        self.best_logits: torch.Tensor | None = None
        self.best_score: torch.Tensor | None = None
        self.frozen: torch.Tensor | None = None  # cases no longer attacked (not robust)
        self.threshold: float | None = cfg.robust_threshold
        self.info: dict = {}
        self.history: list[dict] = []  # per evaluation (AttackOutput.history)

    def _bounds(self, clamp: tuple) -> tuple[torch.Tensor, torch.Tensor]:
        """``(lo, hi)`` tensors of ``x``'s shape: one range, or one per channel."""
        import torch

        if not isinstance(clamp[0], tuple):
            return torch.full_like(self.x, clamp[0]), torch.full_like(self.x, clamp[1])
        axis = self.channel_axis
        if axis is None or self.x.shape[axis] != len(clamp):
            n = "no channel axis" if axis is None else f"{self.x.shape[axis]} channels"
            raise ValueError(f"{len(clamp)} per-channel clamp ranges for an input with {n}")
        shape = [1] * self.x.ndim
        shape[axis] = len(clamp)
        ranges = torch.tensor(clamp, dtype=self.x.dtype, device=self.x.device)  # (C, 2)
        lo, hi = (ranges[:, i].reshape(shape).expand_as(self.x) for i in (0, 1))
        return lo, hi

    def project_(self, delta: torch.Tensor) -> torch.Tensor:
        if self.lo is not None:
            delta.add_(self.x).clamp_(min=self.lo, max=self.hi).sub_(self.x)
        return project_(delta, self.cfg.eps, self.cfg.norm)

    def random_point(self, kind: str = "uniform", scale: float = 1.0) -> torch.Tensor:
        import torch

        shape, eps = self.x.shape, self.cfg.eps * scale
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

    def evaluate(
        self,
        delta: torch.Tensor,
        need_grad: bool,
        weighting_step: int | None = None,
        objective: Any = None,
    ):
        """Loss ``(N,)``, gradient w.r.t. delta (or None) and detached logits at x + delta.

        ``objective(logits) -> (N,)`` replaces the configured loss (FAB's logit gap).
        """
        import torch

        check_cancel(self.cancel, f"{self.cfg.attack} attack")
        grad = None
        d = delta.detach().requires_grad_(True) if need_grad else delta
        with torch.enable_grad() if need_grad else torch.no_grad():
            logits = self.forward(self.x + d)
            if objective is not None:
                loss = objective(logits)
            else:
                w = None
                if weighting_step is not None:
                    w = voxel_weights(
                        self.cfg.weighting, logits, self.target, weighting_step, self.cfg.steps
                    )
                loss = self.loss_fn(logits, self.target, w)
            if need_grad:
                (grad,) = torch.autograd.grad(loss.sum(), d)
                self.n_backward += 1
        self.n_forward += 1
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, max(self.total, self.done))
        return loss.detach(), grad, logits.detach()

    def restarts(self, n: int, gate_every: bool = True) -> Iterator[int]:
        """The restarts of ``n`` that run; under robust-threshold gating the clean input is
        evaluated first (``restart=-1``) and a restart runs only while some case is still
        robust, the others frozen (``gate_every=False``: only the first restart is gated)."""
        import torch

        if self.threshold is not None:
            delta = torch.zeros_like(self.x)
            loss, _, logits = self.evaluate(delta, need_grad=False)
            self.record(-1, 0, loss, self.track(delta, logits, loss))
            assert self.best_dice is not None  # track() kept the clean input
            self.info["clean_dice"] = self.best_dice.tolist()
        for r in range(n):
            if r == 0 or gate_every:
                self.frozen = None
                if self.threshold is not None and self.best_dice is not None:
                    robust = self.best_dice > float(self.threshold)
                    self.frozen = ~robust
                    if not bool(robust.any()):
                        self.info["restarts_run"] = r
                        return
            self.info["restarts_run"] = r + 1
            yield r

    def track(
        self,
        delta: torch.Tensor,
        logits: torch.Tensor,
        loss: torch.Tensor | None = None,
        candidate: bool = True,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Dice of the current iterate; keep it per case by the selection rule.

        ``candidate=False`` only measures (``select="loss"`` keeps restart ends);
        ``mask`` limits which cases may take this iterate.
        """
        import torch

        dice = case_dice(logits, self.target)
        if not candidate:
            return dice
        if self.cfg.select == "loss":
            if loss is None:
                raise ValueError("select='loss' needs the loss of every candidate")
            score = loss.double()
        else:
            score = -dice.double()
        if self.best_dice is None:
            self.best_dice, self.best_delta = dice.clone(), delta.clone()
            self.best_logits, self.best_score = logits.clone(), score.clone()
            return dice
        # kept together with best_dice
        assert self.best_score is not None and self.best_delta is not None
        assert self.best_logits is not None
        take = score >= self.best_score if self.cfg.keep_best else torch.ones_like(dice).bool()
        if self.frozen is not None:
            take &= ~self.frozen
        if mask is not None:
            take &= mask
        if bool(take.any()):
            self.best_dice = torch.where(take, dice, self.best_dice)
            self.best_score = torch.where(take, score, self.best_score)
            self.best_delta[take] = delta[take]
            self.best_logits[take] = logits[take]
        return dice

    def record(self, restart: int, step: int, loss: Any, dice: Any, **extra: Any) -> None:
        """One row of :attr:`history` (tensors as lists)."""
        row = {"restart": restart, "step": step, "loss": loss.tolist(), "dice": dice.tolist()}
        row.update({k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in extra.items()})
        self.history.append(row)

    def output(self) -> AttackOutput:
        if self.progress is not None and self.done < self.total:
            self.progress(self.total, self.total)  # stopped early (gating): close the count
        best = (self.best_delta, self.best_logits, self.best_dice, self.history)
        return AttackOutput(*best, self.n_forward, self.n_backward, dict(self.info))


def ascent_(delta: torch.Tensor, grad: torch.Tensor, step: Any, norm: str) -> torch.Tensor:
    """``delta += step * direction(grad)`` in place (sign for L-inf, unit L2 direction)."""
    if norm == "linf":
        direction = grad.sign()
    else:
        direction = grad / _bshape(per_case_norm(grad, "l2").clamp(min=1e-30), grad)
    if isinstance(step, float):
        return delta.add_(direction, alpha=step)
    return delta.addcmul_(_bshape(step, delta), direction)
