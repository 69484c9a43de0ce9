"""A structure's conditioning frames, prompted as SAM2's video predictor prompts them.

Each prompt its own call on an initial conditioning frame, the frame's earlier output as
``prev_sam_mask_logits``; the last output is encoded into memory (docs/design.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, PromptSet

from . import _loop

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from ._walks import FrameFeatures

#: ``prev_sam_mask_logits`` are clamped to this magnitude (as the predictor does).
PREV_LOGIT_CLAMP = 32.0


def prompt_points(
    xy: list[tuple[float, float]],
    labels: list[int],
    hw: tuple[int, int],
    image_size: int,
    device: Any,
) -> dict:
    """SAM point inputs from native ``(x, y)`` pixels, as ``add_new_points_or_box``."""
    import torch

    coords = torch.tensor(xy, dtype=torch.float32).reshape(1, len(xy), 2)
    coords = coords / torch.tensor([hw[1], hw[0]])
    coords = coords * image_size
    lab = torch.tensor(labels, dtype=torch.int32).reshape(1, len(labels))
    return {"point_coords": coords.to(device), "point_labels": lab.to(device)}


def mask_input(mask: Any, image_size: int, device: Any) -> torch.Tensor:
    """A mask prompt resized to the model's input size as ``add_new_mask`` does."""
    import torch
    import torch.nn.functional as F

    m = torch.as_tensor(np.asarray(mask) if not isinstance(mask, torch.Tensor) else mask)
    m = (m > 0).float()[None, None].to(device)
    size = (image_size, image_size)
    if tuple(m.shape[-2:]) != size:
        m = F.interpolate(m, size=size, mode="bilinear", align_corners=False, antialias=True)
        m = (m >= 0.5).float()
    return m


def _inputs(
    prompt: Any, points: dict, hw: tuple[int, int], size: int, device: Any
) -> tuple[dict | None, Any]:
    """``(point_inputs, mask_inputs)`` of one call; updates ``points`` (per frame)."""
    from sam2.utils.misc import concat_points

    f = prompt.index
    if isinstance(prompt, MaskPrompt):
        points.pop(f, None)
        return None, mask_input(prompt.mask, size, device)
    if isinstance(prompt, Box):
        new = prompt_points(
            [(prompt.x0, prompt.y0), (prompt.x1 - 1, prompt.y1 - 1)], [2, 3], hw, size, device
        )
        points[f] = new  # clear_old_points=True
    else:
        new = prompt_points([(prompt.x, prompt.y)], [1 if prompt.positive else 0], hw, size, device)
        points[f] = concat_points(points.get(f), new["point_coords"], new["point_labels"])
    return points[f], None


def condition_structure(
    network: Any,
    feats: FrameFeatures,
    prompts: PromptSet,
    n: int,
    hw: tuple[int, int],
    fill_hole_area: int,
    device: Any,
) -> dict:
    """``{frame: conditioning output}`` of a structure's prompts, a box's corners
    ``[x0, y0, x1 - 1, y1 - 1]``."""
    import torch
    import torch.nn.functional as F

    size = int(network.image_size)
    features: dict[int, tuple] = {}
    outs: dict[int, dict] = {}
    points: dict[int, dict] = {}
    with _loop.IouProbe(network) as probe:
        for prompt in prompts.prompts:
            f = int(prompt.index)
            if f not in features:
                features[f] = feats.read(f)
            point_inputs, mask_in = _inputs(prompt, points, hw, size, device)
            prev = None
            if point_inputs is not None and f in outs:
                prev = torch.clamp(outs[f]["pred_masks"], -PREV_LOGIT_CLAMP, PREV_LOGIT_CLAMP)
            prompt_in = {"point_inputs": point_inputs, "mask_inputs": mask_in}
            out = _loop.track_step(
                network, f, features[f], n, {}, {}, **prompt_in, prev_sam_mask_logits=prev
            )
            out["pred_masks"] = _loop.fill_holes(out["pred_masks"], fill_hole_area)
            # a mask prompt's decoder call gives only the object pointer: no estimate
            heard = probe.take()
            out["iou"] = None if mask_in is not None or heard is None else heard[0]
            outs[f] = out
    conds = {}
    for f, out in outs.items():  # propagate_in_video_preflight: encode the last outputs
        vf, _, sizes = features[f]
        high_res = F.interpolate(
            out["pred_masks"], size=(size, size), mode="bilinear", align_corners=False
        )
        mem, mem_pos = network._encode_new_memory(
            current_vision_feats=vf,
            feat_sizes=sizes,
            pred_masks_high_res=high_res,
            object_score_logits=out["object_score_logits"],
            is_mask_from_pts=True,
        )
        out["maskmem_features"], out["maskmem_pos_enc"] = mem, mem_pos
        conds[f] = _loop.compact(out, out["pred_masks"])  # keeps its "iou"
    return conds


def reading_order(prompts: PromptSet) -> list[int]:
    """Conditioning frames in the order of their first prompt (the predictor's order)."""
    return list(dict.fromkeys(int(p.index) for p in prompts.prompts))
