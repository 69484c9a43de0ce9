"""Pieces of our SAM2 video-propagation loop over SAM2Base's modules.

The loop (:mod:`._walks`, with the features of :mod:`._features`) reproduces what
``sam2.sam2_video_predictor.SAM2VideoPredictor`` computes for MedSAM2's 3D protocol
(box on the key frame, ``propagate_in_video`` forward, reset, re-prompt,
``propagate_in_video(reverse=True)``), per object, with differences that do not
change the result:

* images are encoded once per case, in fixed blocks of frames (the encoder does not
  depend on prompts or memory), shared by all structures and both directions, and
  each structure's key-frame conditioning is shared by its forward and backward walks;
* frames come in as tensors (no JPEG folder), and the walks can run with autograd;
* only the memory the model can still attend to is kept (the conditioning frame,
  the last ``num_maskmem - 1`` frames, the last ``max_obj_ptrs_in_encoder`` pointers).

Memory features are rounded to bfloat16 as the reference stores them; the low-res
mask logits get the reference's ``fill_hole_area`` post-processing (holes of at
most 8 pixels, 8-connectivity) before being resized to the native size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: MedSAM2's input size (SAM2.1 networks use 1024: the network's ``image_size``).
IMAGE_SIZE = 512


def connected_components(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """8-connected components of a binary ``(N, 1, H, W)`` mask: labels and per-pixel areas.

    The CPU equivalent of ``sam2.utils.misc.get_connected_components`` (an optional
    CUDA kernel in Meta's package).

    Examples
    --------
    >>> import torch
    >>> m = torch.tensor([[[[1, 0, 0], [0, 1, 0], [0, 0, 0]]]])
    >>> labels, areas = connected_components(m)
    >>> labels[0, 0].tolist(), int(areas.max())
    ([[1, 0, 0], [0, 1, 0], [0, 0, 0]], 2)
    """
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
    """Set background holes (logit <= 0, 8-connected, area <= ``max_area``) to 0.1.

    Matches ``sam2.utils.misc.fill_holes_in_mask_scores``; differentiable with
    respect to the logits that are kept.
    """
    import torch

    if max_area <= 0:
        return logits
    labels, areas = connected_components(logits <= 0)
    hole = ((labels > 0) & (areas <= max_area)).to(logits.device)
    if not bool(hole.any()):
        return logits
    return torch.where(hole, torch.full_like(logits, 0.1), logits)


def box_points(box_xyxy: tuple[float, float, float, float], hw: tuple[int, int], device: Any,
               image_size: int = IMAGE_SIZE):
    """Box corners as SAM point inputs, computed exactly as ``add_new_points_or_box``.

    Examples
    --------
    >>> box_points((0, 0, 32, 16), (64, 64), "cpu", 1024)["point_coords"].tolist()
    [[[0.0, 0.0], [512.0, 256.0]]]
    """
    import torch

    coords = torch.tensor(box_xyxy, dtype=torch.float32).reshape(1, 2, 2)
    coords = coords / torch.tensor([hw[1], hw[0]])
    coords = coords * image_size
    labels = torch.tensor([[2, 3]], dtype=torch.int32)
    return {"point_coords": coords.to(device), "point_labels": labels.to(device)}


def compact(out: dict, logits: torch.Tensor) -> dict:
    """What later frames read of a frame's output (memory features rounded to bfloat16)."""
    import torch

    mem = out["maskmem_features"]
    return {
        "maskmem_features": None if mem is None else mem.to(torch.bfloat16),
        "maskmem_pos_enc": out["maskmem_pos_enc"],
        "pred_masks": logits,
        "obj_ptr": out["obj_ptr"],
        "object_score_logits": out["object_score_logits"],
    }


def condition_key_frame(
    model: Any,
    features: tuple[list, list, list],
    key: int,
    n: int,
    points: dict | None,
    mask_input: torch.Tensor | None,
    fill_hole_area: int,
) -> dict:
    """Segment the key frame from its prompt and encode it as conditioning memory.

    ``add_new_points_or_box`` (or ``add_new_mask``) + ``propagate_in_video_preflight``;
    ``features`` are the key frame's flattened image features.
    """
    import torch.nn.functional as F

    vf, vp, sizes = features
    out = model.track_step(
        frame_idx=key,
        is_init_cond_frame=True,
        current_vision_feats=vf,
        current_vision_pos_embeds=vp,
        feat_sizes=sizes,
        point_inputs=points,
        mask_inputs=mask_input,
        output_dict={"cond_frame_outputs": {}, "non_cond_frame_outputs": {}},
        num_frames=n,
        track_in_reverse=False,
        run_mem_encoder=False,
    )
    logits = fill_holes(out["pred_masks"], fill_hole_area)
    high_res = F.interpolate(
        logits, size=(model.image_size, model.image_size), mode="bilinear", align_corners=False
    )
    mem, mem_pos = model._encode_new_memory(
        current_vision_feats=vf,
        feat_sizes=sizes,
        pred_masks_high_res=high_res,
        object_score_logits=out["object_score_logits"],
        is_mask_from_pts=True,
    )
    out["maskmem_features"], out["maskmem_pos_enc"] = mem, mem_pos
    return compact(out, logits)


def to_native(logits: torch.Tensor, hw: tuple[int, int]) -> torch.Tensor:
    """Bilinear resize of ``(..., 1, h, w)`` logits to the native ``(H, W)``."""
    import torch.nn.functional as F

    if tuple(logits.shape[-2:]) == tuple(hw):
        return logits
    return F.interpolate(logits, size=tuple(hw), mode="bilinear", align_corners=False)
