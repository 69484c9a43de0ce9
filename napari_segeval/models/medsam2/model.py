"""MedSAM2 as a :class:`~napari_segeval.models.base.PromptableModel`.

Frames are preprocessed as MedSAM2's inference code does (CT window or MR
percentile clip to 0-255, truncation to uint8, grey to RGB, /255, ImageNet
mean/std) and kept at the native size; :meth:`MedSAM2Model.propagate` resizes
them to 512 x 512 with Pillow's bicubic weights (differentiably, without
Pillow's uint8 rounding between its two passes), runs our propagation loop
(:mod:`._loop`) and returns probabilities at the native size (bilinear resize of
the logits, as the video predictor does; ``logit > 0`` is the mask).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._errors import InvalidImageError, SegEvalError
from napari_segeval.inference.windowing import (
    DEFAULT_CT_WINDOW,
    apply_window,
    mr_clip,
    parse_window,
    window_bounds,
)
from napari_segeval.models.base import NormalizeInfo, Order
from napari_segeval.prompts.box import Box

from . import _loop
from ._build import FILL_HOLE_AREA, load_network
from ._resize import resize_bicubic

if TYPE_CHECKING:  # pragma: no cover
    import threading

    import torch

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_CT = ("ct",)


def to_uint8_range(image: np.ndarray, modality: str, window: Any = None) -> np.ndarray:
    """Intensities to MedSAM2's uint8 range: CT window (default abdomen) or MR clip.

    RGB input (``(..., 3)`` with modality ``"rgb"``/``"video"``) is only clipped.

    Examples
    --------
    >>> to_uint8_range(np.array([[-200.0, 40.0, 500.0]]), "CT").tolist()
    [[0, 127, 255]]
    """
    arr = np.asarray(image)
    mod = modality.lower()
    if mod in _CT:
        level, width = parse_window(window if window is not None else DEFAULT_CT_WINDOW)
        scaled = apply_window(arr, level, width)
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


class MedSAM2Model:
    """MedSAM2 (SAM2.1 Hiera-tiny, 512 px, 7 memory frames) with our propagation loop.

    Parameters
    ----------
    network : sam2.modeling.sam2_base.SAM2Base
        The loaded network (see :func:`load_medsam2`).
    device : str or torch.device, optional
        ``None``/``"auto"``: CUDA, else MPS, else CPU.
    encode_batch : int
        Frames per image-encoder batch.
    fill_hole_area : int
        Fill background holes up to this many low-res pixels (MedSAM2: 8).
    """

    name = "medsam2"

    def __init__(
        self,
        network: Any,
        device: Any = None,
        encode_batch: int = 4,
        fill_hole_area: int = FILL_HOLE_AREA,
    ) -> None:
        from napari_segeval.models._device import pick_device

        self.device = pick_device(device if device is None else str(device))
        self.network = network.to(self.device).eval()
        for param in self.network.parameters():  # gradients flow to inputs only
            param.requires_grad_(False)
        self.encode_batch = int(encode_batch)
        self.fill_hole_area = int(fill_hole_area)
        self._cache: tuple | None = None

    # -- preprocessing -------------------------------------------------
    def preprocess(self, image: np.ndarray, modality: str, window: Any = None) -> torch.Tensor:
        """Raw ``(n, H, W)`` (or RGB ``(n, H, W, 3)``) -> normalized ``(n, H, W, 3)`` float32."""
        import torch

        u8 = to_uint8_range(image, modality, window)
        rgb = np.repeat(u8[..., None], 3, axis=-1) if u8.shape[-1:] != (3,) else u8
        mean = np.asarray(IMAGENET_MEAN, dtype=np.float32)
        std = np.asarray(IMAGENET_STD, dtype=np.float32)
        return torch.from_numpy(((rgb.astype(np.float32) / 255.0 - mean) / std).astype(np.float32))

    def normalize_info(
        self, modality: str, window: Any = None, image: np.ndarray | None = None
    ) -> NormalizeInfo:
        """Raw units per normalized unit (smallest ImageNet std) and the valid range.

        CT: the window width spans 0..255; MR/PET: the 0.5-99.5 percentile span of
        the non-zero voxels of ``image`` (required); other modalities: 255 grey levels.
        """
        lo = min((0.0 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD))
        hi = max((1.0 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD))
        raw_lo, raw_hi = window_bounds(modality, window, image)
        per = (raw_hi - raw_lo) * min(IMAGENET_STD)
        if modality.lower() in _CT:
            level, width = parse_window(window if window is not None else DEFAULT_CT_WINDOW)
            desc = f"CT window W={width:g} L={level:g} -> 0..255 -> ImageNet (std {min(IMAGENET_STD)})"
        else:
            desc = (f"raw {raw_lo:g}..{raw_hi:g} -> 0..255 -> ImageNet normalization "
                    f"(std {min(IMAGENET_STD)})")
        return NormalizeInfo(per, lo, hi, desc)

    # -- inference -------------------------------------------------------
    def model_input(self, frames: Any) -> torch.Tensor:
        """Normalized native frames -> ``(n, 3, 512, 512)`` network input (differentiable)."""
        x = _stack_rgb(frames, self.device)
        return resize_bicubic(x, (_loop.IMAGE_SIZE, _loop.IMAGE_SIZE))

    def propagate(
        self,
        frames: Any,
        key_index: int,
        box: Box,
        order: Order = "forward",
        *,
        init_mask: Any = None,
        progress: Any = None,
        cancel: threading.Event | None = None,
        stop_when_empty: bool = False,
        grad: bool = False,
        prior_volume: Any = None,
    ) -> torch.Tensor:
        """Probabilities ``(n_visited, H, W)`` in visit order (see the base protocol).

        ``prior_volume`` is refused: MedSAM2 conditions each frame on a memory bank
        of several earlier frames, not on one previous mask.
        """
        import torch

        if prior_volume is not None:
            raise SegEvalError(
                "MedSAM2 conditions each frame on a memory bank of several frames; "
                "a per-slice chain with a given previous mask is not defined for it "
                "(use the full chain)"
            )

        logits = self.propagate_logits(
            frames, key_index, box, order, init_mask=init_mask, progress=progress,
            cancel=cancel, stop_when_empty=stop_when_empty, grad=grad,
        )
        return torch.sigmoid(logits)

    def propagate_logits(
        self,
        frames: Any,
        key_index: int,
        box: Box,
        order: Order = "forward",
        *,
        init_mask: Any = None,
        progress: Any = None,
        cancel: threading.Event | None = None,
        stop_when_empty: bool = False,
        grad: bool = False,
    ) -> torch.Tensor:
        """Like :meth:`propagate` but returns native-size logits (mask = ``logits > 0``).

        With ``grad=False`` a forward call followed by a backward call on the same
        ``frames`` object, key and prompt reuses the image features and the key
        frame's output (each frame is encoded once); the cache holds the last
        ``frames`` tensor until the next call.
        """
        import torch

        from napari_segeval.models._device import autocast_context

        if order not in ("forward", "backward"):
            raise ValueError(f"order must be 'forward' or 'backward', got {order!r}")
        if grad:
            ctx: Any = torch.enable_grad()
        else:
            ctx = torch.inference_mode()
        with ctx, autocast_context(self.device, enabled=not grad):
            feats, cond, hw = self._prepare(frames, key_index, box, init_mask, grad)
            out = _loop.run_walk(
                self.network, feats, key_index, cond, order == "backward", hw,
                self.fill_hole_area, progress, cancel, stop_when_empty,
            )
        return out.float()

    def _prepare(self, frames: Any, key: int, box: Box, init_mask: Any, grad: bool):
        n, h, w = (int(s) for s in tuple(frames.shape)[:3])
        if not 0 <= key < n:
            raise ValueError(f"key index {key} outside 0..{n - 1}")
        # reuse only for the same tensor object, unmodified (its version counter unchanged)
        version = getattr(frames, "_version", None)
        reusable = not grad and init_mask is None and version is not None
        sig = (key, box, version)
        hit = self._cache is not None and self._cache[0] is frames and self._cache[1] == sig
        if reusable and hit:
            return self._cache[2], self._cache[3], (h, w)
        feats = _loop.FrameFeatures(self.network, self.model_input(frames), self.encode_batch)
        up = [key] + [key + d for d in (1, -1, 2, -2, 3, -3) if 0 <= key + d < n]
        points, mask_in = None, None
        if init_mask is not None:
            mask_in = self._mask_input(init_mask)
        else:
            # MedSAM2 builds boxes from masks with inclusive maxima: (x0, y0, x1-1, y1-1)
            xyxy = (box.x0, box.y0, box.x1 - 1, box.y1 - 1)
            points = _loop.box_points(xyxy, (h, w), self.device)
        cond = _loop.condition_key_frame(
            self.network, feats, key, n, points, mask_in, self.fill_hole_area, up
        )
        self._cache = (frames, sig, feats, cond) if reusable else None
        return feats, cond, (h, w)

    def _mask_input(self, mask: Any) -> torch.Tensor:
        """A key-frame mask prompt resized to 512 as ``add_new_mask`` does."""
        import torch
        import torch.nn.functional as F

        m = torch.as_tensor(np.asarray(mask) if not isinstance(mask, torch.Tensor) else mask)
        m = (m > 0).float()[None, None].to(self.device)
        size = (_loop.IMAGE_SIZE, _loop.IMAGE_SIZE)
        if tuple(m.shape[-2:]) != size:
            m = F.interpolate(m, size=size, mode="bilinear", align_corners=False, antialias=True)
            m = (m >= 0.5).float()
        return m


def load_medsam2(path: str | Path, device: Any = None, encode_batch: int = 4) -> MedSAM2Model:
    """Load a MedSAM2 checkpoint (``{"model": state_dict}``) strictly and safely.

    Raises
    ------
    MissingDependencyError
        The ``medsam2`` extra (``sam2``, ``hydra-core``) is not installed.
    ReadError
        One line naming the file: missing, not a readable torch file, refused
        because it contains pickled Python objects (code), no ``"model"`` entry, or
        keys/shapes that do not match SAM2.1 Hiera-tiny at 512 px.
    SegEvalError
        torch is older than 2.10.

    Examples
    --------
    >>> load_medsam2("no/such/MedSAM2_latest.pt")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.ReadError: no/such/MedSAM2_latest.pt: MedSAM2 checkpoint not found
    """
    return MedSAM2Model(load_network(path), device=device, encode_batch=encode_batch)
