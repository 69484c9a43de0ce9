"""MedSAM2's frame preprocessing as its scripts do it: 8-bit intensities, RGB, Pillow's resize;
:func:`resize_bicubic` is Pillow's bicubic (Keys cubic, ``a = -0.5``, support stretched when
shrinking) as one matrix per axis: differentiable, no uint8 rounding.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._errors import InvalidImageError
from napari_segeval.inference.windowing import apply_window, mr_clip, parse_window

if TYPE_CHECKING:  # pragma: no cover
    import torch

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_CT = ("ct",)


def to_uint8_range(
    image: np.ndarray, modality: str, window: Any = None, ct_mapping: str = "window"
) -> np.ndarray:
    """Intensities to MedSAM2's uint8 range: CT window (default abdomen) or MR clip."""
    arr = np.asarray(image)
    mod = modality.lower()
    if mod in _CT:
        level, width = parse_window(window)
        scaled = apply_window(arr, level, width, ct_mapping)
    elif mod in ("rgb", "video", "us", "endoscopy"):
        scaled = np.clip(np.asarray(arr, dtype=np.float32), 0, 255)
    else:
        scaled = mr_clip(arr)
    return scaled.astype(np.uint8)  # truncation, as np.uint8(...) in MedSAM2


def _stack_rgb(frames: Any, device: Any) -> torch.Tensor:
    """``(n, H, W)`` or ``(n, H, W, 3)`` -> float tensor ``(n, 3, H, W)`` on ``device``."""
    import torch

    x = frames if isinstance(frames, torch.Tensor) else torch.as_tensor(np.asarray(frames))
    if x.ndim == 3:
        x = x.unsqueeze(-1).expand(*x.shape, 3)
    if x.ndim != 4 or x.shape[-1] != 3:
        raise InvalidImageError(
            f"MedSAM2 frames must be (n, H, W) or (n, H, W, 3), got shape {tuple(x.shape)}"
        )
    return x.to(device=device, dtype=torch.float32).permute(0, 3, 1, 2)


def pillow_resize(x: torch.Tensor, size: int) -> torch.Tensor:
    """Normalized ``(n, 3, H, W)`` frames -> ``(n, 3, size, size)`` the way MedSAM2 does it."""
    import torch
    from PIL import Image

    mean = torch.tensor(IMAGENET_MEAN, dtype=torch.float32, device=x.device)[:, None, None]
    std = torch.tensor(IMAGENET_STD, dtype=torch.float32, device=x.device)[:, None, None]
    u8 = torch.round((x.detach().float() * std + mean) * 255.0).clamp(0, 255)
    rgb = u8.to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
    bicubic = Image.Resampling.BICUBIC
    out = np.stack(
        [
            np.asarray(Image.fromarray(np.ascontiguousarray(f), "RGB").resize((size,) * 2, bicubic))
            for f in rgb
        ]
    )
    t = torch.from_numpy(out).to(x.device).permute(0, 3, 1, 2).float() / 255.0
    return (t - mean) / std


def _cubic(x: np.ndarray, a: float = -0.5) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def pil_bicubic_matrix(n_in: int, n_out: int) -> np.ndarray:
    """``(n_out, n_in)`` matrix of Pillow's bicubic resampling weights along one axis."""
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
    """Resize ``(..., H, W)`` to ``(..., h, w)`` with Pillow's bicubic weights."""
    import torch

    h_in, w_in = int(images.shape[-2]), int(images.shape[-1])
    if (h_in, w_in) == tuple(size):
        return images
    my = torch.as_tensor(pil_bicubic_matrix(h_in, size[0]), dtype=images.dtype)
    mx = torch.as_tensor(pil_bicubic_matrix(w_in, size[1]), dtype=images.dtype)
    my, mx = my.to(images.device), mx.to(images.device)
    return my @ images @ mx.T
