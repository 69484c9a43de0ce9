"""Per-case attack losses ``(N,)`` (per-voxel losses averaged per case, so each case gets its own
gradient) on logits ``(N, C, *spatial)``, voxel weights of SegPGD (Gu et al. 2022) and CosPGD
(Agnihotri et al. 2024), and the Dice that picks iterates. torch is imported inside."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import torch

LOSSES = ("ce", "dice", "dlr")
#: Losses without a gradient: usable by attacks that only query the model (Square).
FORWARD_ONLY_LOSSES = ("hard-dice",)
WEIGHTINGS = (None, "segpgd", "cospgd")


def _case_mean(per_voxel: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """Per-case mean of per-voxel values, weighted when ``weights`` is given."""
    if weights is not None:
        per_voxel = per_voxel * weights
    return per_voxel.reshape(per_voxel.shape[0], -1).mean(dim=1)


def cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-case mean of the (weighted) per-voxel cross-entropy."""
    import torch.nn.functional as F

    return _case_mean(F.cross_entropy(logits.float(), target, reduction="none"), weights)


def soft_dice_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    weights: torch.Tensor | None = None,
    smooth: float = 1e-5,
) -> torch.Tensor:
    """``1 -`` mean soft Dice over foreground classes, per case."""
    import torch

    if weights is not None:
        raise ValueError("the soft Dice loss takes no per-voxel weights (use 'ce' or 'dlr')")
    c = logits.shape[1]
    if c < 2:
        raise ValueError("soft Dice needs at least 2 classes (background + foreground)")
    prob = torch.softmax(logits.float(), dim=1).reshape(logits.shape[0], c, -1)
    onehot = torch.nn.functional.one_hot(target.reshape(target.shape[0], -1), c)
    onehot = onehot.permute(0, 2, 1).to(prob.dtype)
    inter = (prob[:, 1:] * onehot[:, 1:]).sum(-1)
    den = prob[:, 1:].sum(-1) + onehot[:, 1:].sum(-1)
    dice = (2 * inter + smooth) / (den + smooth)
    return 1.0 - dice.mean(dim=1)


def dlr_loss(
    logits: torch.Tensor, target: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-case mean of Croce & Hein's per-voxel DLR margin (untargeted, >= 3 classes):
    ``-(z_y - max_{i != y} z_i) / (z_pi1 - z_pi3)``."""
    import torch

    if logits.shape[1] < 3:
        raise ValueError(f"the DLR loss needs at least 3 classes, got {logits.shape[1]}")
    z = logits.float()
    srt, _ = z.sort(dim=1)
    z_y = z.gather(1, target.unsqueeze(1)).squeeze(1)
    top_is_y = z.argmax(dim=1) == target
    other = torch.where(top_is_y, srt[:, -2], srt[:, -1])
    return _case_mean(-(z_y - other) / (srt[:, -1] - srt[:, -3] + 1e-12), weights)


def hard_dice_loss(
    logits: torch.Tensor, target: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """``1 -`` the hard Dice of :func:`case_dice` per case: no gradient, Square only (ROG's)."""
    if weights is not None:
        raise ValueError("the hard Dice loss takes no per-voxel weights")
    return 1.0 - case_dice(logits, target)


def get_loss(name: str) -> Any:
    """The loss function called ``name`` (one of :data:`LOSSES` or :data:`FORWARD_ONLY_LOSSES`)."""
    table = dict(
        zip(LOSSES + FORWARD_ONLY_LOSSES, (cross_entropy, soft_dice_loss, dlr_loss, hard_dice_loss))
    )
    if name not in table:
        raise ValueError(f"unknown loss {name!r}: use one of {', '.join(table)}")
    return table[name]


def voxel_weights(
    kind: str | None, logits: torch.Tensor, target: torch.Tensor, step: int, steps: int
) -> torch.Tensor | None:
    """Per-voxel weights (detached), or ``None``: SegPGD's ``1 - lambda`` right and ``lambda``
    wrong, ``lambda = t / (2T)``; CosPGD's cosine of the softmax and the one-hot target."""
    import torch

    if kind is None:
        return None
    with torch.no_grad():
        if kind == "segpgd":
            lam = step / (2.0 * max(steps, 1))
            correct = logits.argmax(dim=1) == target
            return torch.where(correct, 1.0 - lam, lam).float()
        if kind == "cospgd":
            prob = torch.softmax(logits.float(), dim=1)
            onehot = torch.nn.functional.one_hot(target, logits.shape[1]).movedim(-1, 1)
            return torch.nn.functional.cosine_similarity(prob, onehot.float(), dim=1)
    raise ValueError(f"unknown weighting {kind!r}: use one of segpgd, cospgd")


def case_dice(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean hard Dice over foreground classes per case, from logits (argmax).

    Classes absent from both the target and the prediction are skipped; a case
    with no foreground anywhere scores 1.
    """
    import torch

    n, c = logits.shape[:2]
    pred = logits.argmax(dim=1).reshape(n, -1)
    tgt = target.reshape(n, -1).to(pred.dtype)
    offset = (torch.arange(n, device=pred.device) * c * c)[:, None]
    counts = torch.bincount((offset + tgt * c + pred).reshape(-1), minlength=n * c * c)
    cm = counts.reshape(n, c, c).double()
    tp = torch.diagonal(cm, dim1=1, dim2=2)[:, 1:]
    den = cm.sum(dim=2)[:, 1:] + cm.sum(dim=1)[:, 1:]
    present = den > 0
    dice = torch.where(present, 2 * tp / den.clamp(min=1), torch.zeros_like(den))
    k = present.sum(dim=1)
    out = torch.where(k > 0, dice.sum(dim=1) / k.clamp(min=1), torch.ones_like(dice[:, 0]))
    return out.float()
