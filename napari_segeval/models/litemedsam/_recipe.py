"""The per-slice steps of the LiteMedSAM authors' recipe (``CVPR24_LiteMedSAM_infer.py``).

Longest side area-resized to 256, min-max normalized, zero-padded bottom-right; logits
cropped and resized back bilinearly. :func:`resize_area` is OpenCV's 8-bit ``INTER_AREA``,
rounded as OpenCV rounds, straight-through gradient. Imports torch: import it in functions.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

#: The model's input size.
SIZE = 256
#: Pixels added on each side of the previous slice's box (256-pixel space).
BOX_GROWTH = 3


def resized_size(h: int, w: int, target: int = SIZE) -> tuple[int, int]:
    """The recipe's size after resizing the longest side to ``target``."""
    scale = target * 1.0 / max(h, w)
    return int(h * scale + 0.5), int(w * scale + 0.5)


def _mode(src: tuple[int, int], dst: tuple[int, int]) -> str:
    """OpenCV's INTER_AREA case for a resize of ``src`` to ``dst`` ``(H, W)``."""
    if src == dst:
        return "copy"
    sy, sx = src[0] / dst[0], src[1] / dst[1]
    if sy >= 1 and sx >= 1:
        fast = abs(sy - round(sy)) < 2.2e-16 and abs(sx - round(sx)) < 2.2e-16
        return "blocks" if fast else "area"
    return "linear"


@lru_cache(maxsize=64)
def axis_weights(src: int, dst: int, mode: str) -> np.ndarray:
    """``(dst, src)`` weights of one axis of OpenCV's INTER_AREA resize in ``mode``."""
    out = np.zeros((dst, src))  # (a copy never gets here: resize_area returns the image)
    scale = src / dst
    if mode in ("blocks", "area"):
        for d in range(dst):
            f1 = d * scale
            f2 = f1 + scale
            cell = min(scale, src - f1)
            s1, s2 = math.ceil(f1), math.floor(f2)
            s2 = min(s2, src - 1)
            s1 = min(s1, s2)
            if s1 - f1 > 1e-3:
                out[d, s1 - 1] += float(np.float32((s1 - f1) / cell))
            for s in range(s1, s2):
                out[d, s] += float(np.float32(1.0 / cell))
            if f2 - s2 > 1e-3:
                out[d, s2] += float(np.float32(min(min(f2 - s2, 1.0), cell) / cell))
        return out
    inv = dst / src
    for d in range(dst):
        s = math.floor(d * scale)
        f = float(np.float32((d + 1) - (s + 1) * inv))
        f = 0.0 if f <= 0 else f - math.floor(f)
        if s >= src - 1:
            s, f = src - 1, 0.0
        out[d, s] += 1.0 - f
        if f:
            out[d, s + 1] += f
    return out


def _ste(x: torch.Tensor, rounded: torch.Tensor) -> torch.Tensor:
    """``rounded`` forward, the gradient of ``x`` backward (straight-through)."""
    return x + (rounded - x).detach()


def round_u8(x: torch.Tensor, half_up: bool = False) -> torch.Tensor:
    """Round to whole grey levels in [0, 255] (straight-through), as an 8-bit cast does."""
    r = torch.floor(x + 0.5) if half_up else torch.round(x)
    return _ste(x, r.clamp(0, 255))


def resize_area(image: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """``cv2.resize(image, (W', H'), interpolation=cv2.INTER_AREA)`` of an 8-bit image."""
    h, w = int(image.shape[-2]), int(image.shape[-1])
    mode = _mode((h, w), (int(size[0]), int(size[1])))
    if mode == "copy":
        return image
    lead = image.shape[:-2]
    x = image.reshape(-1, h, w)
    if mode == "blocks":
        ky, kx = h // size[0], w // size[1]
        y = F.avg_pool2d(x[:, None].double(), (ky, kx))[:, 0]
        out = round_u8(y, half_up=(ky, kx) == (2, 2))
    else:
        wy = torch.as_tensor(axis_weights(h, int(size[0]), mode), device=x.device)
        wx = torch.as_tensor(axis_weights(w, int(size[1]), mode), device=x.device)
        y = wy @ x.double() @ wx.T
        if mode == "area":  # OpenCV's float32 sums, in its order
            out = _ste(y, torch.round(_area_float32(x, wy, wx)).clamp(0, 255).to(y.dtype))
        else:  # OpenCV's fixed-point linear pass, exactly; gradients of the float one
            out = _ste(y, _linear_fixed(x, wy, wx).to(y.dtype))
    return out.to(image.dtype).reshape(*lead, int(size[0]), int(size[1]))


def _ordered_taps(weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's non-zero weights in source order, zero-padded: index and weight ``(n, k)``."""
    nz = weights > 0
    k = int(nz.sum(dim=1).max())
    order = torch.argsort((~nz).to(torch.int8), dim=1, stable=True)[:, :k]
    return order, torch.gather(weights, 1, order) * torch.gather(nz, 1, order)


def _area_float32(x: torch.Tensor, wy: torch.Tensor, wx: torch.Tensor) -> torch.Tensor:
    """OpenCV's area resize of ``(C, H, W)`` in its float32 arithmetic: each source row
    summed over its horizontal taps, the rows summed over their vertical taps, in order."""
    v = torch.round(x.detach()).float()
    xi, xa = _ordered_taps(wx)
    yi, ya = _ordered_taps(wy)
    xa, ya = xa.float(), ya.float()
    hor = torch.zeros(*v.shape[:-1], xi.shape[0], dtype=torch.float32, device=v.device)
    for k in range(xi.shape[1]):
        hor = hor + v[..., xi[:, k]] * xa[:, k]
    out = ya[:, 0, None] * hor[:, yi[:, 0]]
    for k in range(1, yi.shape[1]):
        out = out + ya[:, k, None] * hor[:, yi[:, k]]
    return out


def _taps(weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The two taps of each row of linear weights (index0, index1, coef0, coef1), the
    coefficients in OpenCV's fixed point (x 2048, rounded half to even)."""
    n, src = weights.shape
    first = (weights > 0).to(torch.int64).argmax(dim=1)
    second = torch.clamp(first + 1, max=src - 1)
    rows = torch.arange(n, device=weights.device)
    c0 = weights[rows, first]
    c1 = torch.where(second > first, weights[rows, second], torch.zeros_like(c0))
    fixed = lambda c: torch.round(c.float() * 2048).to(torch.int64)  # noqa: E731
    return first, second, fixed(c0), fixed(c1)


def _linear_fixed(x: torch.Tensor, wy: torch.Tensor, wx: torch.Tensor) -> torch.Tensor:
    """``cv2.resize`` of 8-bit ``(C, H, W)`` grey levels with linear taps, in its arithmetic."""
    v = torch.round(x.detach()).to(torch.int64)
    i0, i1, a0, a1 = _taps(wx)
    hor = v[..., i0] * a0 + v[..., i1] * a1
    j0, j1, b0, b1 = _taps(wy)
    s0, s1 = hor[:, j0] >> 4, hor[:, j1] >> 4
    val = ((s0 * b0[:, None]) >> 16) + ((s1 * b1[:, None]) >> 16)
    return torch.clamp((val + 2) >> 2, 0, 255)


def model_input(frame: torch.Tensor) -> tuple[torch.Tensor, tuple[int, int]]:
    """One slice in [0, 1] (grey ``(H, W)`` or RGB ``(H, W, 3)``) -> ``(3, 256, 256)`` input."""
    grey = frame.ndim == 2
    chw = frame[None] if grey else frame.permute(2, 0, 1)
    u8 = round_u8(chw * 255.0)
    h, w = int(chw.shape[-2]), int(chw.shape[-1])
    nh, nw = resized_size(h, w)
    r = resize_area(u8, (nh, nw))
    lo, hi = r.amin(), r.amax()
    r = (r - lo) / torch.clamp(hi - lo, min=1e-8)
    if grey:
        r = r.expand(3, nh, nw)
    return F.pad(r, (0, SIZE - nw, 0, SIZE - nh)), (nh, nw)


def scale_box(xyxy: tuple[int, int, int, int], shape: tuple[int, int]) -> list[int]:
    """A box ``[x_min, y_min, x_max, y_max]`` of a ``(H, W)`` slice in 256-pixel space."""
    ratio = SIZE / max(int(shape[0]), int(shape[1]))
    return [int(c * ratio) for c in xyxy]


def mask_to_256(mask: np.ndarray, value: int = 1) -> np.ndarray:
    """A slice's mask as the recipe sees it in 256-pixel space."""
    h, w = mask.shape
    nh, nw = resized_size(h, w)
    u8 = torch.from_numpy(np.asarray(mask, bool) * float(value))
    r = resize_area(u8, (nh, nw)).numpy() > 0
    out = np.zeros((SIZE, SIZE), bool)
    out[:nh, :nw] = r
    return out


def box_of_256(mask256: np.ndarray, grow: int = BOX_GROWTH) -> list[int] | None:
    """The tight box of a 256-space mask grown by ``grow`` and clamped to [0, 256], or None."""
    ys, xs = np.nonzero(mask256)
    if ys.size == 0:
        return None
    return [
        max(0, int(xs.min()) - grow),
        max(0, int(ys.min()) - grow),
        min(SIZE, int(xs.max()) + grow),
        min(SIZE, int(ys.max()) + grow),
    ]


def to_slice(
    logits: torch.Tensor, resized: tuple[int, int], shape: tuple[int, int]
) -> torch.Tensor:
    """Mask logits ``(B, 1, 256, 256)`` -> ``(B, H, W)`` logits on the slice."""
    crop = logits[..., : resized[0], : resized[1]]
    return F.interpolate(
        crop, size=tuple(int(s) for s in shape), mode="bilinear", align_corners=False
    )[:, 0]
