"""Differentiable resize with Pillow's bicubic weights (Keys cubic, ``a = -0.5``, support
stretched when shrinking), one matrix per axis: no uint8 rounding, unlike ``resize="pillow"``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch


def _cubic(x: np.ndarray, a: float = -0.5) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def pil_bicubic_matrix(n_in: int, n_out: int) -> np.ndarray:
    """``(n_out, n_in)`` matrix of Pillow's bicubic resampling weights along one axis.

    Examples
    --------
    >>> m = pil_bicubic_matrix(4, 8)
    >>> m.shape, bool(np.allclose(m.sum(axis=1), 1.0))
    ((8, 4), True)
    >>> pil_bicubic_matrix(5, 5).round(6).tolist() == np.eye(5).tolist()
    True
    """
    scale = n_in / n_out
    filterscale = max(scale, 1.0)
    support = 2.0 * filterscale
    mat = np.zeros((n_out, n_in), dtype=np.float64)
    for xx in range(n_out):
        center = (xx + 0.5) * scale
        xmin = max(math.trunc(center - support + 0.5), 0)
        xmax = min(math.trunc(center + support + 0.5), n_in)
        xs = np.arange(xmin, xmax)
        w = _cubic((xs - center + 0.5) / filterscale)
        total = w.sum()
        mat[xx, xmin:xmax] = w / total if total != 0 else w
    return mat


def resize_bicubic(images: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Resize ``(..., H, W)`` to ``(..., h, w)`` with Pillow's bicubic weights.

    Examples
    --------
    >>> import torch
    >>> resize_bicubic(torch.ones(2, 3, 5, 7), (8, 8)).shape
    torch.Size([2, 3, 8, 8])
    """
    import torch

    h_in, w_in = int(images.shape[-2]), int(images.shape[-1])
    if (h_in, w_in) == tuple(size):
        return images
    my = torch.as_tensor(pil_bicubic_matrix(h_in, size[0]), dtype=images.dtype)
    mx = torch.as_tensor(pil_bicubic_matrix(w_in, size[1]), dtype=images.dtype)
    my, mx = my.to(images.device), mx.to(images.device)
    return my @ images @ mx.T
