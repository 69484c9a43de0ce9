"""Our SAM2 video-propagation loop for one object and one box, over SAM2Base's modules.

It reproduces what ``sam2.sam2_video_predictor.SAM2VideoPredictor`` computes for
MedSAM2's 3D protocol (box on the key frame, ``propagate_in_video`` forward, reset,
re-prompt, ``propagate_in_video(reverse=True)``) with three differences that do not
change the result:

* images are encoded once, in batches of frames (the encoder does not depend on
  memory), and the key frame's features and conditioning output are shared by the
  forward and backward walks;
* frames come in as tensors (no JPEG folder), and the walk can run with autograd;
* only the memory the model can still attend to is kept (the conditioning frame,
  the last ``num_maskmem - 1`` frames, the last ``max_obj_ptrs_in_encoder`` pointers).

Memory features are rounded to bfloat16 as the reference stores them; the low-res
mask logits get the reference's ``fill_hole_area`` post-processing (holes of at
most 8 pixels, 8-connectivity) before being resized to the native size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._cancel import check_cancel

if TYPE_CHECKING:  # pragma: no cover
    import torch

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


def box_points(box_xyxy: tuple[float, float, float, float], hw: tuple[int, int], device: Any):
    """Box corners as SAM point inputs, computed exactly as ``add_new_points_or_box``."""
    import torch

    coords = torch.tensor(box_xyxy, dtype=torch.float32).reshape(1, 2, 2)
    coords = coords / torch.tensor([hw[1], hw[0]])
    coords = coords * IMAGE_SIZE
    labels = torch.tensor([[2, 3]], dtype=torch.int32)
    return {"point_coords": coords.to(device), "point_labels": labels.to(device)}


class FrameFeatures:
    """Image-encoder features of a frame stack, computed lazily in batches, each frame once."""

    def __init__(self, model: Any, images: torch.Tensor, batch: int = 4) -> None:
        self.model = model
        self.images = images
        self.batch = max(1, int(batch))
        self._fpn: dict[int, list[torch.Tensor]] = {}
        self._pos: list[torch.Tensor] | None = None

    def prefetch(self, order: list[int]) -> None:
        """Encode the frames of ``order`` that are not cached yet, in one batch."""
        todo = [i for i in order if i not in self._fpn]
        if not todo:
            return
        out = self.model.forward_image(self.images[todo].to(self.model.device).float())
        for j, i in enumerate(todo):
            self._fpn[i] = [f[j : j + 1] for f in out["backbone_fpn"]]
        if self._pos is None:  # sine position encodings depend on the shape only
            self._pos = [p[:1] for p in out["vision_pos_enc"]]

    def get(self, i: int, upcoming: list[int]) -> tuple[list, list, list]:
        """Flattened ``(vision_feats, vision_pos_embeds, feat_sizes)`` of frame ``i``."""
        if i not in self._fpn:
            self.prefetch([i] + [j for j in upcoming if j != i][: self.batch - 1])
        backbone_out = {"backbone_fpn": list(self._fpn[i]), "vision_pos_enc": list(self._pos)}
        _, feats, pos, sizes = self.model._prepare_backbone_features(backbone_out)
        return feats, pos, sizes

    def drop(self, i: int) -> None:
        """Forget frame ``i`` (it will not be visited again)."""
        self._fpn.pop(i, None)


def _compact(out: dict, logits: torch.Tensor) -> dict:
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
    feats: FrameFeatures,
    key: int,
    n: int,
    points: dict | None,
    mask_input: torch.Tensor | None,
    fill_hole_area: int,
    upcoming: list[int],
) -> dict:
    """Segment the key frame from its prompt and encode it as conditioning memory.

    ``add_new_points_or_box`` (or ``add_new_mask``) + ``propagate_in_video_preflight``.
    """
    import torch.nn.functional as F

    vf, vp, sizes = feats.get(key, upcoming)
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
    return _compact(out, logits)


def walk(
    model: Any,
    feats: FrameFeatures,
    key: int,
    n: int,
    cond: dict,
    reverse: bool,
    fill_hole_area: int,
    cancel: Any = None,
) -> Iterator[torch.Tensor]:
    """Yield the low-res mask logits ``(1, 1, 128, 128)`` of the key frame and then of
    each frame in walk order (``propagate_in_video`` for one object)."""
    step = -1 if reverse else 1
    order = list(range(key, -1, -1)) if reverse else list(range(key, n))
    output_dict: dict = {"cond_frame_outputs": {key: cond}, "non_cond_frame_outputs": {}}
    keep = max(model.num_maskmem, model.max_obj_ptrs_in_encoder) + 1
    yield cond["pred_masks"]
    for pos, t in enumerate(order[1:], start=1):
        check_cancel(cancel, "MedSAM2 propagation")
        vf, vp, sizes = feats.get(t, order[pos:])
        out = model.track_step(
            frame_idx=t,
            is_init_cond_frame=False,
            current_vision_feats=vf,
            current_vision_pos_embeds=vp,
            feat_sizes=sizes,
            point_inputs=None,
            mask_inputs=None,
            output_dict=output_dict,
            num_frames=n,
            track_in_reverse=reverse,
            run_mem_encoder=True,
        )
        logits = fill_holes(out["pred_masks"], fill_hole_area)
        past = output_dict["non_cond_frame_outputs"]
        past[t] = _compact(out, logits)
        past.pop(t - step * keep, None)
        if t != key:
            feats.drop(t)
        yield logits


def to_native(logits: torch.Tensor, hw: tuple[int, int]) -> torch.Tensor:
    """Bilinear resize of ``(..., 1, h, w)`` logits to the native ``(H, W)``."""
    import torch.nn.functional as F

    if tuple(logits.shape[-2:]) == tuple(hw):
        return logits
    return F.interpolate(logits, size=tuple(hw), mode="bilinear", align_corners=False)


def run_walk(
    model: Any,
    feats: FrameFeatures,
    key: int,
    cond: dict,
    reverse: bool,
    hw: tuple[int, int],
    fill_hole_area: int,
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
    stop_when_empty: bool = False,
) -> torch.Tensor:
    """Native-size logits ``(n_visited, H, W)`` of one walk, in visit order."""
    import torch

    n = int(feats.images.shape[0])
    total = key + 1 if reverse else n - key
    rows: list[torch.Tensor] = []
    for logits in walk(model, feats, key, n, cond, reverse, fill_hole_area, cancel):
        native = to_native(logits, hw)[0, 0]
        rows.append(native.float())
        if progress is not None:
            progress(len(rows), total)
        if stop_when_empty and not bool((native > 0).any()):
            break
    if len(rows) < total:
        fill = torch.full(tuple(hw), -1024.0, dtype=rows[0].dtype, device=rows[0].device)
        rows.extend([fill] * (total - len(rows)))
        if progress is not None:
            progress(total, total)
    return torch.stack(rows)
