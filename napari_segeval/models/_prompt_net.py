"""The built-in prompt network and its differentiable crop geometry (imports torch).

Input: a square window at ``size x size`` with 4 channels (format 1) or 6: frame, prior's
frame, prior mask, box mask, positive and negative click disks (:func:`click_maps`).
Windows are cut and pasted with ``grid_sample`` so gradients reach the full-size frames.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from napari_segeval.models._blocks import conv_block

#: Window side per larger bounding-box side, and the minimum side (native pixels).
CONTEXT = 1.6
MIN_SIDE = 16.0
#: Radius of a click's disk in window pixels (:func:`click_maps`).
CLICK_RADIUS = 2.5
#: Input channels of a network that takes clicks (4: boxes and masks only).
POINT_CHANNELS = 6
#: Window side (native pixels) around the positive clicks of a frame without output yet.
CLICK_SIDE = 64.0


class PromptUNet(nn.Module):
    """Small fully convolutional U-Net: 4 (or 6) input channels -> 1 foreground logit."""

    def __init__(self, width: int = 12, depth: int = 3, in_channels: int = 4) -> None:
        super().__init__()
        if in_channels not in (4, POINT_CHANNELS):
            raise ValueError(f"in_channels must be 4 or {POINT_CHANNELS}, got {in_channels}")
        self.in_channels = int(in_channels)
        self.width, self.depth = int(width), int(depth)
        chans = [width * 2**i for i in range(depth + 1)]
        self.down = nn.ModuleList(
            conv_block(cin, c, dims=2, norm="batch")
            for cin, c in zip([self.in_channels, *chans], chans)
        )
        self.up = nn.ModuleList()
        self.fuse = nn.ModuleList()
        for c_hi, c_lo in zip(chans[::-1][:-1], chans[::-1][1:]):
            self.up.append(nn.ConvTranspose2d(c_hi, c_lo, 2, stride=2))
            self.fuse.append(conv_block(2 * c_lo, c_lo, dims=2, norm="batch"))
        self.head = nn.Conv2d(chans[0], 1, 1)

    @property
    def takes_points(self) -> bool:
        """Whether the network has click channels."""
        return self.in_channels == POINT_CHANNELS

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, 1, S, S)`` for inputs ``(B, C, S, S)`` (S divisible by 2**depth)."""
        if x.shape[1] == 4 and self.in_channels == POINT_CHANNELS:
            x = torch.cat([x, x.new_zeros((x.shape[0], 2) + tuple(x.shape[2:]))], dim=1)
        img = x[:, :2]
        mean = img[:, :1].mean(dim=(2, 3), keepdim=True)
        std = img[:, :1].std(dim=(2, 3), keepdim=True)
        img = (img - mean) / (std + 0.02)
        h = torch.cat([img, x[:, 2:] * 2.0 - 1.0], dim=1)
        skips = []
        for i, block in enumerate(self.down):
            if i:
                h = F.max_pool2d(h, 2)
            h = block(h)
            skips.append(h)
        for up, fuse, skip in zip(self.up, self.fuse, skips[::-1][1:]):
            h = fuse(torch.cat([up(h), skip], dim=1))
        return self.head(h)


Region = tuple[int, int, int, int]


def bbox(mask: torch.Tensor) -> Region | None:
    """``(y0, x0, y1, x1)`` of a boolean ``(H, W)`` mask (None when empty)."""
    fg = mask.nonzero()
    if fg.shape[0] == 0:
        return None
    lo, hi = fg.min(dim=0).values.tolist(), fg.max(dim=0).values.tolist()
    return lo[0], lo[1], hi[0] + 1, hi[1] + 1


def window_from_bbox(
    y0: float, x0: float, y1: float, x1: float, context: float = CONTEXT
) -> tuple[float, float, float]:
    """Square window ``(cy, cx, half)`` in pixel-edge coordinates around a box."""
    cy, cx = (y0 + y1) / 2.0, (x0 + x1) / 2.0
    side = max(max(y1 - y0, x1 - x0) * context, MIN_SIDE)
    return float(cy), float(cx), float(side / 2.0)


def window_from_mask(
    mask: torch.Tensor | None, points: Sequence[tuple[float, float, bool]] = ()
) -> tuple[float, float, float] | None:
    """Window around ``mask > 0.5`` grown to include the positive ``points``, or ``None``."""
    region = None if mask is None else bbox(mask.detach() > 0.5)
    ys = [] if region is None else [region[0], region[2] - 1]
    xs = [] if region is None else [region[1], region[3] - 1]
    for y, x, positive in points:
        if positive:
            ys.append(math.floor(y + 0.5))
            xs.append(math.floor(x + 0.5))
    if not ys:
        return None
    return window_from_bbox(min(ys), min(xs), max(ys) + 1, max(xs) + 1)


def window_from_points(
    points: list[tuple[float, float, bool]], side: float = CLICK_SIDE
) -> tuple[float, float, float]:
    """Square window around the positive clicks of a frame with nothing else to go by."""
    window = window_from_mask(None, points)
    if window is None:
        raise ValueError("a window from points needs a positive point")
    cy, cx, half = window
    return cy, cx, max(half, float(side) / 2.0)


def refine_window(
    mask: torch.Tensor | None,
    points: list[tuple[float, float, bool]],
    box: tuple[float, float, float, float] | None = None,
    prompt_mask: torch.Tensor | None = None,
) -> tuple[float, float, float] | None:
    """A click pass's window: the box's, the mask prompt's, the output's grown to the
    positive clicks, else :data:`CLICK_SIDE` around those clicks; None: none."""
    if box is not None:
        return window_from_bbox(*box)
    if prompt_mask is not None:
        win = window_from_mask(prompt_mask)
        if win is not None:
            return win
    if mask is not None and bool((mask.detach() > 0.5).any()):
        return window_from_mask(mask, points)
    if any(positive for _, _, positive in points):
        return window_from_points(points)
    return None


def crop_theta(windows: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Affine ``theta (B, 2, 3)`` that resamples windows ``(B, 3) = (cy, cx, half)``."""
    cy, cx, half = windows[:, 0], windows[:, 1], windows[:, 2]
    theta = torch.zeros(windows.shape[0], 2, 3, dtype=windows.dtype, device=windows.device)
    theta[:, 0, 0] = 2.0 * half / width
    theta[:, 0, 2] = 2.0 * cx / width - 1.0
    theta[:, 1, 1] = 2.0 * half / height
    theta[:, 1, 2] = 2.0 * cy / height - 1.0
    return theta


def crop(planes: torch.Tensor, windows: torch.Tensor, size: int) -> torch.Tensor:
    """Resample ``planes (B, C, H, W)`` inside ``windows`` to ``(B, C, size, size)``."""
    b, c, h, w = planes.shape
    theta = crop_theta(windows.to(planes.dtype), h, w)
    grid = F.affine_grid(theta, [b, c, size, size], align_corners=False)
    return F.grid_sample(planes, grid, mode="bilinear", padding_mode="border", align_corners=False)


def paste_theta(windows: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """The inverse of :func:`crop_theta`: ``(B, 2, 3)`` from window to frame coordinates."""
    theta = crop_theta(windows, height, width)
    inv = torch.zeros_like(theta)
    inv[:, 0, 0] = 1.0 / theta[:, 0, 0]
    inv[:, 0, 2] = -theta[:, 0, 2] / theta[:, 0, 0]
    inv[:, 1, 1] = 1.0 / theta[:, 1, 1]
    inv[:, 1, 2] = -theta[:, 1, 2] / theta[:, 1, 1]
    return inv


def paste(values: torch.Tensor, windows: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Inverse of :func:`crop`: place ``values (B, C, S, S)`` on ``(B, C, H, W)``, 0 outside."""
    inv = paste_theta(windows.to(values.dtype), height, width)
    b, c = values.shape[:2]
    grid = F.affine_grid(inv, [b, c, height, width], align_corners=False)
    return F.grid_sample(values, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def click_maps(
    points: list[list[tuple[float, float, bool]]],
    windows: torch.Tensor,
    size: int,
    radius: float = CLICK_RADIUS,
) -> torch.Tensor:
    """Positive and negative click maps ``(B, 2, size, size)`` of each window's clicks."""
    b = windows.shape[0]
    out = torch.zeros(b, 2, size, size, dtype=torch.float32, device=windows.device)
    if not any(points):
        return out
    centre = torch.arange(size, dtype=torch.float32, device=windows.device) + 0.5
    for i, clicks in enumerate(points):
        cy, cx, half = (float(v) for v in windows[i])
        scale = size / (2.0 * half)  # window pixels per native pixel
        for y, x, positive in clicks:
            wy = (y + 0.5 - (cy - half)) * scale  # the click's pixel centre, in window pixels
            wx = (x + 0.5 - (cx - half)) * scale
            disk = ((centre[:, None] - wy) ** 2 + (centre[None, :] - wx) ** 2) <= radius**2
            ch = 0 if positive else 1
            out[i, ch] = torch.maximum(out[i, ch], disk.float())
    return out
