"""Dynamic Uncertainty-aware Optimization (DUO) of Li et al., CVPR 2026, for the built-in trainer.

The authors' released code (github.com/Lry777/CVPR_AUV, README example 2,
``dynamic_uncertainty_aware_loss``) defines the loss; this module follows it:

* **Scales from the network being trained.** At every step, the semantic
  perception scale ``S[b, c]`` of each foreground class ``c`` of each patch ``b``
  is computed from the network's own logits ``[D, H, W]`` of that class
  (``compute_all_semantic_scales``: the ``D x HW`` matrix, its singular values
  ``s`` plus 1e-6, ``p = s / sum s``, entropy over ``log r``). Background keeps
  ``S = 0``. As in their code, the scale is not detached: the gradient also
  flows through the singular values (their "scale regularizer").
* **Re-weighting.** The base loss of class ``c`` in patch ``b`` is divided by
  ``1 + alpha S[b, c]`` (``alpha = 0.5``, their default); the total is the sum
  over foreground classes and patches divided by ``B (C - 1)``.
* **Label denoising.** A noise head (here a 1x1x1 convolution on the last
  decoder features, beside the segmentation head, one channel per class)
  estimates ``n = sigmoid(noise_logits)``; the target is ``onehot (1 - n)``,
  detached.

What their code leaves open, and the choices made here (listed in the
``li2026`` preset's differences):

* Their example detaches the denoised targets and has no other loss, so its
  noise head receives no gradient and keeps its random initialization. Here the
  noise head starts at ``n ~ 0.018`` (zero weights, bias -4) and, from half of
  the iterations on (:data:`NOISE_START`), learns where a foreground label is
  contradicted by the network's own confident prediction: binary cross-entropy
  of the noise logits against 1 where the network's (detached) probability of
  the labelled class is below :data:`NOISE_THRESHOLD` (0.1), 0 elsewhere, on the
  voxels labelled with that class. Before that the targets are the labels.
* Their base loss is binary cross-entropy of per-class sigmoid logits (the
  comment names "BCE Loss + Dice Loss"); the built-in U-Net has a softmax
  output, so the base loss here is the binary cross-entropy plus one minus the
  soft Dice of the softmax probability of the class, per patch.

torch is imported inside the functions (the constants are read without it).
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
    """``S[b, c]`` of ``logits`` ``(B, C, D, H, W)`` as their ``compute_all_semantic_scales('D_HW')``.

    Class 0 (background) is 0. Differentiable (``torch.linalg.svdvals``).

    Examples
    --------
    >>> import torch
    >>> x = torch.zeros(1, 2, 4, 3, 3); x[0, 1] = torch.eye(4, 9).reshape(4, 3, 3)
    >>> semantic_scales(x)[0].tolist()
    [0.0, 1.0]
    """
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
    """The DUO loss of one batch (module doc), plus the noise head's loss when ``denoise``.

    Parameters
    ----------
    logits, noise_logits : torch.Tensor
        ``(B, C, D, H, W)`` from the segmentation and noise heads.
    target : torch.Tensor
        ``(B, D, H, W)`` class indices.
    num_classes : int
        ``C``, background included.
    alpha : float
        Weight of the scale in the divisor ``1 + alpha S``.
    denoise : bool
        Apply the noise head's estimate to the targets and train the head
        (False before :data:`NOISE_START`: the targets are the labels).

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> logits = torch.randn(2, 3, 4, 4, 4, generator=g, requires_grad=True)
    >>> y = torch.randint(0, 3, (2, 4, 4, 4), generator=g)
    >>> loss = duo_loss(logits, torch.full((2, 3, 4, 4, 4), NOISE_BIAS), y, 3)
    >>> loss.backward(); bool(torch.isfinite(loss)) and logits.grad is not None
    True
    """
    import torch
    import torch.nn.functional as F

    prob = logits.softmax(1)
    onehot = F.one_hot(target, num_classes).permute(0, 4, 1, 2, 3).float()
    scales = semantic_scales(logits)
    fg, fg_prob = onehot[:, 1:], prob[:, 1:]
    if denoise:
        clean = (fg - torch.sigmoid(noise_logits[:, 1:]) * fg).detach()
    else:
        clean = fg
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
