"""What a structure's walks say about themselves: where each ended and why (an empty slice,
or a quality stop such as the confidence or IoU stop), and the model's per-slice signals,
for :mod:`napari_segeval.uncertainty.risk`. Reading a trace never changes a result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from napari_segeval.models.walk import StopReason, Walk, WalkOutput
from napari_segeval.propagation.walks import confidence_stop


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
        Slice -> the model's own quality estimate (the best of the walks that reached it).
    agreement : mapping of int to float
        Slice -> box-jitter agreement (the lowest of the walks that reached it).
    presence : mapping of int to float
        Slice -> the object's presence probability (SAM2's object score; the highest).
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
    """Where ``walk`` ended (``keep``: the positions its confidence stop kept); None when it
    reached the end of the stack with a mask.
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
    """The trace of one structure's walks (the walks and stop of :func:`~.walks.structure_crop`)."""
    quality: dict[int, float] = {}
    agreement: dict[int, float] = {}
    presence: dict[int, float] = {}
    ends = []
    for walk, out in parts:
        keep = confidence_stop(
            out.values, min_confidence, threshold, walk.last_conditioning_step(), logits
        )
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
