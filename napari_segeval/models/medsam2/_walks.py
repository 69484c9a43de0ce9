"""Several MedSAM2 walks (structure x direction) through one frame stack, advanced together.

Each walk is SAM2's ``propagate_in_video`` for one object with its own memory, indexed by
*step* (docs/design.md): frame ``f`` is step ``(f - start) * (+-1)``. Walks share the image
features (:class:`FrameFeatures`) and each structure's conditioning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from napari_segeval.models._frame_cache import FrameCache, FrameStore
from napari_segeval.models.walk import WalkOptions, step_walks

from . import _loop

if TYPE_CHECKING:  # pragma: no cover
    import torch


class FrameFeatures(FrameCache):
    """SAM2 encoder features of ``frames``, each frame encoded in its fixed block: the
    ``backbone_fpn`` levels (position encodings kept once), prepared on each read."""

    def __init__(
        self,
        network: Any,
        frames: Any,
        to_input: Callable[[Any], torch.Tensor],
        block: int,
        budget_bytes: float | None,
        reads: list[list[int]],
        store: FrameStore | None = None,
    ) -> None:
        self.network = network
        self.frames = frames
        self.to_input = to_input
        self._pos: list | None = store.extra.get("pos") if store is not None else None
        super().__init__(self._encode, int(frames.shape[0]), block, budget_bytes, reads, store)

    def _encode(self, a: int, b: int) -> list[list]:
        out = self.network.forward_image(self.to_input(self.frames[a:b]))
        if self._pos is None:  # sine position encodings depend on the shape only
            self._pos = [p[:1] for p in out["vision_pos_enc"]]
            self.store.extra["pos"] = self._pos
        return [[f[i : i + 1] for f in out["backbone_fpn"]] for i in range(b - a)]

    def read(self, t: int) -> tuple[list, list, list]:
        """Flattened ``(vision_feats, vision_pos_embeds, feat_sizes)`` of frame ``t`` (one read)."""
        fpn = super().get(t)
        backbone_out = {"backbone_fpn": list(fpn), "vision_pos_enc": list(self._pos or [])}
        _, feats, pos, sizes = self.network._prepare_backbone_features(backbone_out)
        return feats, pos, sizes


@dataclass
class MemoryWalk:
    """One walk being tracked; per row its object score (sigmoid: the probability the object
    is on the frame) and IoU estimate (:class:`._loop.IouProbe`), None where not given."""

    frames: list[int]
    group: int
    conds: dict[int, int] = field(default_factory=dict)
    past: dict[int, dict] = field(default_factory=dict)
    rows: list = field(default_factory=list)
    presence: list = field(default_factory=list)
    quality: list = field(default_factory=list)
    last: int = 0
    stopped: bool = False

    @classmethod
    def of(cls, frames: list[int], group: int, cond_frames: list[int], forward: bool) -> MemoryWalk:
        """A walk over ``frames`` (visit order); ``cond_frames`` become steps."""
        sign = 1 if forward else -1
        steps = {c: (c - frames[0]) * sign for c in cond_frames}
        ahead = [v for v in steps.values() if 0 <= v < len(frames)]
        return cls(frames, group, steps, last=max(ahead, default=0))

    def layout(self) -> tuple[int, ...]:
        """The conditioning steps, in order: walks with one layout can share a batch."""
        return tuple(self.conds.values())

    def is_cond(self, step: int) -> bool:
        """Whether the walk's ``step``-th frame is a conditioning frame."""
        return step in self.conds.values()


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
    one = {k: out[k][i : i + 1] for k in ("maskmem_features", "obj_ptr", "object_score_logits")}
    one["maskmem_pos_enc"] = [out["maskmem_pos_enc"][-1][i : i + 1]]
    return _loop.compact(one, logits[i : i + 1])


def track(
    network: Any,
    states: list[MemoryWalk],
    conds: dict[int, dict],
    feats: list,
    step: int,
    n: int,
    fill_hole_area: int,
    probe: _loop.IouProbe,
) -> tuple[torch.Tensor, Any, list | None]:
    """One ``track_step`` of walks with one conditioning layout: low-res logits, object
    score logits ``(B, 1)`` (or None) and the IoU estimates."""
    import torch

    b = len(states)
    if b == 1:
        vision, pos, sizes = feats[0]
    else:
        vision = [torch.cat([f[0][lvl] for f in feats], dim=1) for lvl in range(len(feats[0][0]))]
        pos = [p.expand(-1, b, -1) for p in feats[0][1]]
        sizes = feats[0][2]
    keep = max(network.num_maskmem, network.max_obj_ptrs_in_encoder) + 1
    first = states[0]
    cond = {
        v: _join([conds[s.group][c] for s in states for c in s.conds if s.conds[c] == v])
        for v in first.conds.values()
    }
    past = {
        r: _join([s.past[r] for s in states])
        for r in range(max(0, step - keep + 1), step)
        if r in first.past
    }
    out = _loop.track_step(network, step, (vision, pos, sizes), n, cond, past)
    logits = _loop.fill_holes(out["pred_masks"], fill_hole_area)
    for i, s in enumerate(states):
        s.past[step] = _split(out, logits, i) if b > 1 else _loop.compact(out, logits)
        s.past.pop(step - keep, None)
    return logits, out.get("object_score_logits"), probe.take()


def run_walks(
    network: Any,
    feats: FrameFeatures,
    states: list[MemoryWalk],
    conds: dict[int, dict],
    hw: tuple[int, int],
    fill_hole_area: int,
    batch: bool,
    options: WalkOptions,
) -> None:
    """Each walk's native-size logits rows ``(H, W)`` in visit order (``-1024`` after a stop)."""
    import torch

    def record(s: MemoryWalk, logits: torch.Tensor, score: Any, iou: Any) -> tuple:
        native = _loop.to_native(logits, hw)[0, 0].float()
        s.rows.append(native)
        s.presence.append(None if score is None else float(torch.sigmoid(score.detach()).max()))
        s.quality.append(iou)
        return torch.sigmoid(native.detach()), not bool((native > 0).any())

    def step(group: list[MemoryWalk], j: int) -> list:
        tracked = [s for s in group if not s.is_cond(j)]
        out = {}
        if tracked:
            frame_feats = [feats.read(s.frames[j]) for s in tracked]
            logits, scores, ious = track(
                network, tracked, conds, frame_feats, j, feats.n, fill_hole_area, probe
            )
            for i, s in enumerate(tracked):
                score = None if scores is None else scores[i]
                out[id(s)] = (logits[i : i + 1], score, None if ious is None else ious[i])
        for s in group:
            if s.is_cond(j):
                cond = conds[s.group][s.frames[j]]
                out[id(s)] = (cond["pred_masks"], cond.get("object_score_logits"), cond.get("iou"))
        return [record(s, *out[id(s)]) for s in group]

    def forget(s: MemoryWalk, j: int) -> None:
        for k in range(j, len(s.frames)):
            if not s.is_cond(k):
                feats.forget(s.frames[k], k)

    with _loop.IouProbe(network) as probe:
        step_walks(
            states,
            options,
            step,
            batch=batch,
            key=MemoryWalk.layout,
            on_stop=forget,
            what="MedSAM2 propagation",
        )
    for s in states:  # the frames after a stop
        pad = len(s.frames) - len(s.rows)
        fill = torch.full(tuple(hw), -1024.0, dtype=s.rows[0].dtype, device=s.rows[0].device)
        s.rows += [fill] * pad
        s.presence += [None] * pad
        s.quality += [None] * pad


def reads(states: list[MemoryWalk], cond_frames: dict[int, list[int]]) -> list[list[int]]:
    """Frames read at each step: the conditioning frames at step 0, then where each walk tracks."""
    steps = [[f for frames in cond_frames.values() for f in frames]]
    for step in range(1, max((len(s.frames) for s in states), default=1)):
        steps.append(
            [s.frames[step] for s in states if step < len(s.frames) and not s.is_cond(step)]
        )
    return steps
