"""DUO (Li et al., CVPR 2026) as the authors' ``dynamic_uncertainty_aware_loss``
(github.com/Lry777/CVPR_AUV): per patch and foreground class, the base loss over
``1 + alpha S[b, c]``, targets denoised by a noise head; our choices where their code is silent
are the constants below (docs/protocols.md, ``li2026``). torch is imported inside the functions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: Weight of the scale in ``1 + alpha S`` (their default).
ALPHA = 0.5
#: Initial bias of the noise head: ``sigmoid(-4) ~ 0.018``, labels nearly untouched.
NOISE_BIAS = -4.0
#: A foreground label is called noisy where the network's probability of it is below this.
NOISE_THRESHOLD = 0.1
#: Fraction of the iterations after which the noise head is trained and applied.
NOISE_START = 0.5
#: Their code's epsilon added to the singular values.
SVD_EPS = 1e-6


def semantic_scales(logits: torch.Tensor) -> torch.Tensor:
    """``S[b, c]`` of ``logits (B, C, D, H, W)`` as their ``compute_all_semantic_scales('D_HW')``:
    normalized entropy of the ``D x HW`` singular values (+ :data:`SVD_EPS`); 0 for class 0."""
    import torch

    b, c, d, h, w = logits.shape
    out = torch.zeros((b, c), dtype=torch.float32, device=logits.device)
    if c < 2:
        return out
    mats = torch.nan_to_num(logits[:, 1:].float(), nan=0.0, posinf=0.0, neginf=0.0)
    s = torch.linalg.svdvals(mats.reshape(b * (c - 1), d, h * w)) + SVD_EPS
    p = s / s.sum(dim=-1, keepdim=True)
    entropy = -(p * torch.log(p)).sum(dim=-1) / math.log(s.shape[-1])
    return torch.cat([out[:, :1], entropy.reshape(b, c - 1)], dim=1)


def noise_head(channels: int, num_classes: int) -> torch.nn.Module:
    """The label-noise head: a 1x1x1 convolution starting at ``sigmoid(NOISE_BIAS)`` everywhere."""
    import torch

    head = torch.nn.Conv3d(channels, num_classes, 1)
    torch.nn.init.zeros_(head.weight)
    assert head.bias is not None  # Conv3d's default bias=True
    torch.nn.init.constant_(head.bias, NOISE_BIAS)
    return head


def duo_loss(
    logits: torch.Tensor,
    noise_logits: torch.Tensor,
    target: torch.Tensor,
    num_classes: int,
    *,
    alpha: float = ALPHA,
    denoise: bool = True,
) -> torch.Tensor:
    """The DUO loss of one batch (module doc) of ``(B, C, D, H, W)`` logits and ``(B, D, H, W)``
    targets; ``denoise`` (from :data:`NOISE_START` on) denoises the targets and trains the head."""
    import torch
    import torch.nn.functional as F

    prob = logits.softmax(1)
    onehot = F.one_hot(target, num_classes).permute(0, 4, 1, 2, 3).float()
    scales = semantic_scales(logits)
    fg, fg_prob = onehot[:, 1:], prob[:, 1:]
    clean = (fg - torch.sigmoid(noise_logits[:, 1:]) * fg).detach() if denoise else fg
    dims = (2, 3, 4)
    bce = F.binary_cross_entropy(fg_prob, clean, reduction="none").mean(dims)
    inter = (fg_prob * clean).sum(dims)
    dice = (2 * inter + 1e-5) / (fg_prob.sum(dims) + clean.sum(dims) + 1e-5)
    base = bce + (1 - dice)  # (B, C - 1)
    loss = (base / (1 + alpha * scales[:, 1:])).sum() / base.numel()
    if denoise:
        noisy = (fg_prob.detach() < NOISE_THRESHOLD).float() * fg
        per = F.binary_cross_entropy_with_logits(noise_logits[:, 1:], noisy, reduction="none")
        loss = loss + (per * fg).sum() / fg.sum().clamp(min=1.0)
    return loss


__all__ = [
    "ALPHA",
    "NOISE_BIAS",
    "NOISE_START",
    "NOISE_THRESHOLD",
    "duo_loss",
    "noise_head",
    "semantic_scales",
]
