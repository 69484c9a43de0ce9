"""Pieces of our SAM2 video-propagation loop over SAM2Base's modules.

It computes what ``SAM2VideoPredictor`` computes (docs/design.md), but encodes frames once
per case, takes tensors (autograd possible) and keeps only the memory still attended to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: MedSAM2's input size (SAM2.1 networks use 1024: the network's ``image_size``).
IMAGE_SIZE = 512


def connected_components(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """8-connected components of a binary ``(N, 1, H, W)`` mask: labels and per-pixel areas."""
    import torch
    from scipy import ndimage

    m = mask.detach().cpu().numpy().astype(bool)
    labels = np.zeros(m.shape, dtype=np.int32)
    areas = np.zeros(m.shape, dtype=np.int32)
    structure = np.ones((3, 3), dtype=bool)
    for idx in np.ndindex(*m.shape[:-2]):
        lab, n = ndimage.label(m[idx], structure=structure)
        labels[idx] = lab
        if n:
            areas[idx] = np.where(lab > 0, np.bincount(lab.ravel())[lab], 0)
    return torch.from_numpy(labels), torch.from_numpy(areas)


def fill_holes(logits: torch.Tensor, max_area: int) -> torch.Tensor:
    """Set background holes (logit <= 0, 8-connected, area <= ``max_area``) to 0.1 (as SAM2)."""
    import torch

    if max_area <= 0:
        return logits
    labels, areas = connected_components(logits <= 0)
    hole = ((labels > 0) & (areas <= max_area)).to(logits.device)
    if not bool(hole.any()):
        return logits
    return torch.where(hole, torch.full_like(logits, 0.1), logits)


def track_step(
    network: Any, frame: int, feats: tuple, n: int, cond: dict, past: dict, **prompt: Any
) -> dict:
    """``network.track_step`` on ``frame`` (or step): tracked with memory ``cond``/``past``,
    or with ``prompt`` (``point_inputs``, ``mask_inputs``, ``prev_sam_mask_logits``) an
    initial conditioning frame."""
    vision, pos, sizes = feats
    return network.track_step(
        frame_idx=frame,
        is_init_cond_frame=bool(prompt),
        current_vision_feats=vision,
        current_vision_pos_embeds=pos,
        feat_sizes=sizes,
        point_inputs=prompt.get("point_inputs"),
        mask_inputs=prompt.get("mask_inputs"),
        output_dict={"cond_frame_outputs": cond, "non_cond_frame_outputs": past},
        num_frames=n,
        track_in_reverse=False,
        run_mem_encoder=not prompt,
        prev_sam_mask_logits=prompt.get("prev_sam_mask_logits"),
    )


def compact(out: dict, logits: torch.Tensor) -> dict:
    """What later frames read of a frame's output, with its ``"iou"`` (:class:`IouProbe`);
    memory features rounded to bfloat16 as the reference stores them."""
    import torch

    mem = out["maskmem_features"]
    return {
        "maskmem_features": None if mem is None else mem.to(torch.bfloat16),
        "maskmem_pos_enc": out["maskmem_pos_enc"],
        "pred_masks": logits,
        "obj_ptr": out["obj_ptr"],
        "object_score_logits": out["object_score_logits"],
        "iou": out.get("iou"),
    }


class IouProbe:
    """The IoU head's estimate of the mask SAM 2's decoder keeps, heard on each call."""

    def __init__(self, network: Any) -> None:
        self._network = network
        self._heard: torch.Tensor | None = None
        self._handle: Any = None

    def __enter__(self) -> IouProbe:
        self._handle = self._network.sam_mask_decoder.register_forward_hook(self._hear)
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.remove()

    def _hear(self, _module: Any, _args: Any, out: tuple) -> None:
        self._heard = out[1]

    def take(self) -> list[float] | None:
        """Each object's estimate of the last call (None: the decoder did not run)."""
        heard, self._heard = self._heard, None
        if heard is None:
            return None
        return [float(v) for v in heard.detach().float().amax(dim=-1).reshape(-1)]


def to_native(logits: torch.Tensor, hw: tuple[int, int]) -> torch.Tensor:
    """Bilinear resize of ``(..., 1, h, w)`` logits to the native ``(H, W)``."""
    import torch.nn.functional as F

    if tuple(logits.shape[-2:]) == tuple(hw):
        return logits
    return F.interpolate(logits, size=tuple(hw), mode="bilinear", align_corners=False)
