"""Several MedSAM2 walks (structure x direction) through one frame stack, advanced together.

Every walk is SAM2's ``propagate_in_video`` for one object: its own conditioning
frame, memory bank and object pointers. What the walks share is the frame stack's
image features (:class:`._features.FrameFeatures`, each frame encoded once per
case within a memory budget) and each structure's key-frame conditioning (shared by
its forward and backward walks). All walks advance together
(:func:`napari_segeval.models.base.walk_steps`): at step ``j`` every walk still
going visits its ``j``-th frame.

Memory is indexed by *step* rather than frame number: the conditioning frame is
step 0 and the walk's ``j``-th frame is step ``j``, walked forward. SAM2 reads
memory only through frame differences (the last ``num_maskmem - 1`` frames before
the current one, the temporal position of each object pointer, whose sign follows
the walking direction), so this gives the same memory, positions and result as
the frame numbers of a forward or a reverse walk; it also gives all walks of one
step the same memory layout, so they can run as one batch of ``track_step``
(``batch=True``: fewer, larger kernels on a GPU; on a CPU, batched kernels are not
bit-identical to single ones, so the default there is one walk at a time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from napari_segeval._cancel import check_cancel

from . import _loop

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from ._features import FrameFeatures

_MEMORY_KEYS = ("maskmem_features", "maskmem_pos_enc", "obj_ptr")


@dataclass
class WalkState:
    """One walk being tracked: its frames, key conditioning, memory and output rows."""

    frames: list[int]
    group: int
    past: dict[int, dict] = field(default_factory=dict)
    rows: list = field(default_factory=list)
    stopped: bool = False


def _join(outputs: list[dict]) -> dict:
    """Memory entries of several walks as one batch (a walk's own entry when alone)."""
    import torch

    if len(outputs) == 1:
        return outputs[0]
    return {
        "maskmem_features": torch.cat([o["maskmem_features"] for o in outputs]),
        "maskmem_pos_enc": [torch.cat([o["maskmem_pos_enc"][-1] for o in outputs])],
        "obj_ptr": torch.cat([o["obj_ptr"] for o in outputs]),
    }


def _split(out: dict, logits: torch.Tensor, i: int) -> dict:
    """Walk ``i``'s compact memory entry from a batched ``track_step`` output."""
    one = {k: out[k] for k in ("maskmem_features", "maskmem_pos_enc", "obj_ptr",
                               "object_score_logits")}
    one["maskmem_features"] = one["maskmem_features"][i : i + 1]
    one["maskmem_pos_enc"] = [one["maskmem_pos_enc"][-1][i : i + 1]]
    one["obj_ptr"] = one["obj_ptr"][i : i + 1]
    one["object_score_logits"] = one["object_score_logits"][i : i + 1]
    return _loop.compact(one, logits[i : i + 1])


def track(network: Any, states: list[WalkState], conds: dict[int, dict], feats: list,
          step: int, n: int, fill_hole_area: int) -> torch.Tensor:
    """One ``track_step`` for the walks ``states`` at ``step``; stores their memory.

    ``feats`` holds each walk's ``(vision_feats, vision_pos_embeds, feat_sizes)`` of
    its current frame. Returns the hole-filled low-res logits ``(B, 1, 128, 128)``.
    """
    import torch

    b = len(states)
    if b == 1:
        vision, pos, sizes = feats[0]
    else:
        vision = [torch.cat([f[0][lvl] for f in feats], dim=1) for lvl in range(len(feats[0][0]))]
        pos = [p.expand(-1, b, -1) for p in feats[0][1]]
        sizes = feats[0][2]
    keep = max(network.num_maskmem, network.max_obj_ptrs_in_encoder) + 1
    past = {r: _join([s.past[r] for s in states]) for r in range(max(1, step - keep + 1), step)}
    output_dict = {"cond_frame_outputs": {0: _join([conds[s.group] for s in states])},
                   "non_cond_frame_outputs": past}
    out = network.track_step(
        frame_idx=step, is_init_cond_frame=False, current_vision_feats=vision,
        current_vision_pos_embeds=pos, feat_sizes=sizes, point_inputs=None, mask_inputs=None,
        output_dict=output_dict, num_frames=n, track_in_reverse=False, run_mem_encoder=True,
    )
    logits = _loop.fill_holes(out["pred_masks"], fill_hole_area)
    for i, s in enumerate(states):
        s.past[step] = _split(out, logits, i) if b > 1 else _loop.compact(out, logits)
        s.past.pop(step - keep, None)
    return logits


def run_walks(network: Any, feats: FrameFeatures, states: list[WalkState],
              conds: dict[int, dict], hw: tuple[int, int], fill_hole_area: int, *,
              batch: bool, progress: Any = None, cancel: Any = None,
              stop_when_empty: bool = False, on_frame: Any = None) -> list[torch.Tensor]:
    """Native-size logits ``(n_visited, H, W)`` of every walk, in visit order.

    ``conds[group]`` is each structure's key-frame output (step 0 of its walks);
    ``feats`` must have been planned with :func:`reads` of ``states``.
    ``on_frame(i, frame, probability)`` (optional) hears walk ``i``'s detached
    probability on each frame as soon as it is computed.
    """
    import torch

    n = feats.n
    total = sum(len(s.frames) for s in states)
    done = [0]

    def tick(k: int = 1) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], total)

    number = {id(s): i for i, s in enumerate(states)}

    def record(s: WalkState, logits: torch.Tensor, step: int) -> None:
        native = _loop.to_native(logits, hw)[0, 0].float()
        s.rows.append(native)
        tick()
        if on_frame is not None:
            on_frame(number[id(s)], s.frames[step], torch.sigmoid(native.detach()))
        if stop_when_empty and not bool((native > 0).any()) and len(s.rows) < len(s.frames):
            s.stopped = True
            for j in range(step + 1, len(s.frames)):
                feats.forget(s.frames[j], j)
            tick(len(s.frames) - len(s.rows))

    for s in states:
        record(s, conds[s.group]["pred_masks"], 0)
    for step in range(1, max(len(s.frames) for s in states)):
        active = [s for s in states if not s.stopped and step < len(s.frames)]
        groups = [active] if batch else [[s] for s in active]
        for group in groups:
            if not group:
                continue
            check_cancel(cancel, "MedSAM2 propagation")
            frame_feats = [feats.get(s.frames[step]) for s in group]
            logits = track(network, group, conds, frame_feats, step, n, fill_hole_area)
            for i, s in enumerate(group):
                record(s, logits[i : i + 1], step)
    out = []
    for s in states:
        rows = s.rows
        if len(rows) < len(s.frames):
            fill = torch.full(tuple(hw), -1024.0, dtype=rows[0].dtype, device=rows[0].device)
            rows = rows + [fill] * (len(s.frames) - len(rows))
        out.append(torch.stack(rows))
    return out


def reads(states: list[WalkState], keys: dict[int, int]) -> list[list[int]]:
    """Frames read at each step: each structure's key frame once, then each walk's frame.

    ``keys[group]`` is the key frame of each structure (read once for its conditioning).
    """
    steps = [list(keys.values())]
    for step in range(1, max((len(s.frames) for s in states), default=1)):
        steps.append([s.frames[step] for s in states if step < len(s.frames)])
    return steps
