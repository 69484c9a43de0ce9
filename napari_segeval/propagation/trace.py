"""What a structure's walks say about themselves: where each ended and why, and the
model's own per-slice signals.

A walk that ends before the end of the stack ends for a reason
(:class:`~napari_segeval.models.walk.StopReason`): its next slice came out empty, or the
model stopped on its own judgement (a *quality stop*: the confidence stop of
:func:`~.walks.confidence_stop`, LiteMedSAM's IoU stop). :class:`StructureTrace` keeps
each end (:class:`WalkEnd`) with the per-slice signals the backend computed (its IoU
estimate, the box-jitter agreement), so that a run without a reference can say where a
chain stopped and which slices to look at (:mod:`napari_segeval.uncertainty.risk`).
Reading a trace never changes a result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from napari_segeval.models.walk import StopReason, Walk, WalkOutput
from napari_segeval.propagation.walks import output_stop


@dataclass(frozen=True)
class WalkEnd:
    """Where one walk of a structure ended before the end of the stack.

    Attributes
    ----------
    order : str
        ``"forward"`` or ``"backward"``.
    last : int
        The last slice of the walk with a mask (its start slice when it found nothing).
    after : int or None
        The slice after ``last`` in the walk's direction (None at the stack's edge).
    reason : StopReason
        Why the walk ended there.
    """

    order: str
    last: int
    after: int | None
    reason: StopReason

    @property
    def slices(self) -> tuple[int, ...]:
        """The slices a person should look at: ``last`` and ``after``."""
        return (self.last,) if self.after is None else (self.last, self.after)


@dataclass(frozen=True)
class StructureTrace:
    """A structure's walks as the model saw them.

    Attributes
    ----------
    quality : mapping of int to float
        Slice -> the model's own quality estimate of its mask (the best of the walks
        that reached it); empty for a model without one.
    agreement : mapping of int to float
        Slice -> box-jitter agreement (the lowest of the walks that reached it); empty
        when not computed.
    presence : mapping of int to float
        Slice -> the model's probability that the object is there (SAM2's object score;
        the highest of the walks that reached it); empty for a model without one.
    ends : tuple of WalkEnd
        Every walk that ended before the end of the stack.
    """

    quality: Mapping[int, float] = field(default_factory=dict)
    agreement: Mapping[int, float] = field(default_factory=dict)
    ends: tuple[WalkEnd, ...] = ()
    presence: Mapping[int, float] = field(default_factory=dict)

    @property
    def quality_stops(self) -> tuple[WalkEnd, ...]:
        """The ends where the model stopped on its own judgement."""
        return tuple(e for e in self.ends if e.reason.is_quality_stop)


def _has_mask(value: Any, threshold: float, logits: bool) -> bool:
    if value is None or value.numel() == 0:
        return False
    return bool((value.detach() > (0.0 if logits else threshold)).any())


def walk_end(
    walk: Walk, out: WalkOutput, keep: int, threshold: float = 0.5, logits: bool = False
) -> WalkEnd | None:
    """Where ``walk`` ended (``keep``: the visit positions its confidence stop kept), or
    None when it reached the end of the stack with a mask.

    Examples
    --------
    >>> import torch
    >>> from napari_segeval.prompts.box import Box
    >>> w = Walk(1, Box(0, 0, 1, 1, index=1), "forward")
    >>> out = WalkOutput([1, 2, 3], [(0, 0, 1, 1), (0, 0, 1, 1), None],
    ...                  [torch.ones(1, 1), torch.zeros(1, 1), None], (2, 2))
    >>> walk_end(w, out, 3)
    WalkEnd(order='forward', last=1, after=2, reason=<StopReason.EMPTY: 'the mask ended'>)
    >>> walk_end(w, out, 1).reason.name
    'CONFIDENCE'
    """
    m = len(out)
    found = [j for j in range(min(keep, m)) if _has_mask(out.values[j], threshold, logits)]
    last = found[-1] if found else 0
    if found and last == m - 1:
        return None
    if keep < m and (not found or last == keep - 1):
        reason = StopReason.CONFIDENCE
    elif out.stopped is not None:
        reason = out.stopped
    else:
        reason = StopReason.EMPTY
    after = int(out.frames[last + 1]) if last + 1 < m else None
    return WalkEnd(walk.order, int(out.frames[last]), after, reason)


def structure_trace(
    parts: list[tuple[Walk, WalkOutput]],
    min_confidence: float | None,
    threshold: float = 0.5,
    logits: bool = False,
) -> StructureTrace:
    """The trace of one structure's walks (the same walks and stop as
    :func:`~.walks.structure_crop`).

    Examples
    --------
    >>> import torch
    >>> from napari_segeval.prompts.box import Box
    >>> w = Walk(1, Box(0, 0, 1, 1, index=1), "forward")
    >>> out = WalkOutput([1, 2], [(0, 0, 1, 1), None], [torch.ones(1, 1), None], (2, 2),
    ...                  quality=[0.9, None], stopped=StopReason.IOU)
    >>> t = structure_trace([(w, out)], None)
    >>> dict(t.quality), [(e.last, e.after, e.reason.name) for e in t.quality_stops]
    ({1: 0.9}, [(1, 2, 'IOU')])
    """
    quality: dict[int, float] = {}
    agreement: dict[int, float] = {}
    presence: dict[int, float] = {}
    ends = []
    for walk, out in parts:
        keep = output_stop(out, min_confidence, threshold, walk.last_conditioning_step(), logits)
        for j, f in enumerate(out.frames[:keep]):
            for mine, theirs, best in (
                (quality, out.quality, max),
                (agreement, out.agreement, min),
                (presence, out.presence, max),
            ):
                v = None if theirs is None else theirs[j]
                if v is not None:
                    mine[int(f)] = best(float(v), mine.get(int(f), float(v)))
        end = walk_end(walk, out, keep, threshold, logits)
        if end is not None:
            ends.append(end)
    return StructureTrace(quality, agreement, tuple(ends), presence)


__all__ = ["StructureTrace", "WalkEnd", "structure_trace", "walk_end"]
