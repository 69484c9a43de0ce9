"""Walks: one structure propagated in one direction, and the shared schedule of several.

:class:`Walk` is one walk, :class:`WalkOptions` how a backend runs walks,
:class:`WalkOutput` a walk's result cropped to where it can be non-zero.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import PromptSet

if TYPE_CHECKING:  # pragma: no cover
    import threading

Order = Literal["forward", "backward"]


class StopReason(Enum):
    """Why a walk ended before the end of the stack (the value is what a person is told).

    ``CONFIDENCE`` (mean foreground probability below the calibrated stop) and ``IOU``
    (LiteMedSAM's IoU estimate below the stop ratio of the prompted slice's) are
    *quality stops*: the model gave up, the object may go on.
    """

    EMPTY = "the mask ended"
    CONFIDENCE = "the confidence fell"
    IOU = "the IoU estimate fell"

    @property
    def is_quality_stop(self) -> bool:
        """Whether the model stopped on its own judgement (not an empty slice)."""
        return self is not StopReason.EMPTY


def n_visited(n_frames: int, key_index: int, order: Order) -> int:
    """Number of frames ``propagate`` visits (and returns) for one direction."""
    if not 0 <= key_index < n_frames:
        raise ValueError(f"key index {key_index} outside 0..{n_frames - 1}")
    if order == "forward":
        return n_frames - key_index
    if order == "backward":
        return key_index + 1
    raise ValueError(f"order must be 'forward' or 'backward', got {order!r}")


def visit_indices(n_frames: int, key_index: int, order: Order) -> np.ndarray:
    """Frame indices in visit order (element 0 is the key frame)."""
    step = 1 if order == "forward" else -1
    return key_index + step * np.arange(n_visited(n_frames, key_index, order))


@dataclass(frozen=True, eq=False)
class Walk:
    """One structure walked in one direction from one of its conditioning frames.

    It visits the frames in ``order`` up to the end of the stack and applies each
    visited frame's prompts in the order given.

    Parameters
    ----------
    start : int
        The first frame visited, one that carries prompts.
    prompts : PromptSet or Box
        The structure's prompts; a Box is one box on ``start``.
    order : {"forward", "backward"}
        Towards the last frame or towards frame 0.
    prior_volume : optional ``(n, H, W)``
        Per-slice chain (:meth:`~napari_segeval.models.base.PromptableModel.propagate`).
    """

    start: int
    prompts: Any
    order: Order = "forward"
    prior_volume: Any = None

    def __post_init__(self) -> None:
        start = int(self.start)
        prompts = self.prompts
        if isinstance(prompts, Box):
            prompts = PromptSet.from_box(
                prompts if prompts.index == start else replace(prompts, index=start)
            )
        if not isinstance(prompts, PromptSet):
            raise TypeError(f"a walk takes a PromptSet or a Box, got {type(prompts).__name__}")
        if not prompts.prompts:
            raise ValueError(f"structure {prompts.label}: a walk needs at least one prompt")
        if start not in prompts.frames:
            raise ValueError(
                f"a walk starts on a conditioning frame: {start} carries no "
                f"prompt of structure {prompts.label} (frames {list(prompts.frames)})"
            )
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "prompts", prompts)

    @classmethod
    def of(cls, prompts: Any, order: Order = "forward", prior_volume: Any = None) -> Walk:
        """The walk of ``prompts`` in ``order`` from its first (forward) or last (backward) frame."""
        if isinstance(prompts, Box):
            prompts = PromptSet.from_box(prompts)
        start = prompts.first_frame if order == "forward" else prompts.last_frame
        return cls(start, prompts, order, prior_volume=prior_volume)

    @property
    def label(self) -> int:
        """The structure id."""
        return self.prompts.label

    def frames(self, n_frames: int) -> np.ndarray:
        """Frame indices this walk visits, in visit order (:func:`visit_indices`)."""
        return visit_indices(n_frames, self.start, self.order)

    def last_conditioning_step(self) -> int:
        """Visit position of the last conditioning frame on the way (no stop comes before it)."""
        step = 1 if self.order == "forward" else -1
        return max((f - self.start) * step for f in self.prompts.frames)


@dataclass(frozen=True)
class WalkOptions:
    """How a backend runs walks: the keywords of every walk method, built once by the caller.

    Only ``stop_when_empty`` and ``grad`` change a walk's result.

    Parameters
    ----------
    progress : callable, optional
        ``progress(done, total)`` after each frame, over the steps of all walks.
    cancel : threading.Event, optional
        Checked before each frame: :class:`napari_segeval._cancel.Cancelled`.
    stop_when_empty : bool
        End a walk at the first empty frame after its last conditioning frame.
    grad : bool
        A walk differentiable with respect to the frames (no autocast).
    cache_mb : float, optional
        Bound (MiB) on the per-frame features kept between walks.
    on_frame : callable, optional
        ``on_frame(walk number, frame, prob)``: each frame's detached probability.
    crops : bool
        Return each walk as a :class:`WalkOutput` instead of a full tensor.
    features : optional
        The backend's per-case cache (``feature_cache()``), kept for the next call.
    """

    progress: Callable[[int, int], None] | None = None
    cancel: threading.Event | None = None
    stop_when_empty: bool = False
    grad: bool = False
    cache_mb: float | None = None
    on_frame: Callable[[int, int, Any], None] | None = None
    crops: bool = False
    features: Any = None


#: The options of a walk call that gives none (every field at its default).
WALK_DEFAULTS = WalkOptions()


@dataclass
class WalkOutput:
    """One walk's result, each visited frame kept only where it can differ from ``fill``.

    Per visited frame (visit order): ``boxes`` its crop ``(y0, x0, y1, x1)`` (None: all
    ``fill``, after a stop) and ``values`` its values there; ``fill`` is 0 for
    probabilities, ``-inf`` for logits. Optional per frame: ``quality`` (the IoU head's
    estimate), ``agreement`` (mean Dice of jittered boxes' masks with its mask),
    ``presence`` (SAM2's object score). ``stopped``: a stop the backend made (``IOU``).
    """

    frames: list
    boxes: list
    values: list
    shape: tuple
    fill: float = 0.0
    quality: list | None = None
    agreement: list | None = None
    stopped: StopReason | None = None
    presence: list | None = None

    def __len__(self) -> int:
        return len(self.frames)

    @classmethod
    def from_full(cls, frames: Any, tensor: Any, fill: float = 0.0) -> WalkOutput:
        """Full-size rows ``(n_visited, H, W)`` as a walk output (every box the whole frame)."""
        h, w = (int(s) for s in tensor.shape[-2:])
        frames = [int(f) for f in frames]
        return cls(
            frames,
            [(0, 0, h, w)] * len(frames),
            [tensor[j] for j in range(len(frames))],
            (h, w),
            fill,
        )

    def row(self, j: int) -> Any:
        """Frame ``j`` (visit position) at full size ``(H, W)`` (differentiable)."""
        import torch
        import torch.nn.functional as F

        h, w = self.shape
        box, v = self.boxes[j], self.values[j]
        if box is None:
            ref = next((x for x in self.values if x is not None), None)
            kw = {} if ref is None else {"dtype": ref.dtype, "device": ref.device}
            return torch.full((h, w), self.fill, **kw)
        y0, x0, y1, x1 = box
        if (y0, x0, y1, x1) == (0, 0, h, w):
            return v
        return F.pad(v, (x0, w - x1, y0, h - y1), value=self.fill)

    def full(self) -> Any:
        """All frames at full size ``(n_visited, H, W)``, in visit order."""
        import torch

        return torch.stack([self.row(j) for j in range(len(self.frames))])

    def map(self, fn: Callable[[Any], Any], fill: float) -> WalkOutput:
        """Apply ``fn`` to every crop (for example ``torch.sigmoid``); ``fill`` is ``fn(fill)``."""
        values = [None if v is None else fn(v) for v in self.values]
        return replace(
            self, frames=list(self.frames), boxes=list(self.boxes), values=values, fill=fill
        )


def step_walks(
    states: list[Any],
    options: WalkOptions,
    step: Callable[[list[Any], int], list[Any]],
    *,
    batch: bool = False,
    key: Callable[[Any], Any] = lambda s: 0,
    on_stop: Callable[[Any, int], None] | None = None,
    what: str = "propagation",
) -> None:
    """The step loop of every backend: advance ``states`` together, one frame each per step.

    A state has ``frames`` (visit order), ``last`` (visit position of its last conditioning
    frame) and ``stopped``. ``step(group, j)`` runs the walks still going (one by one, or
    with ``batch`` in groups of equal ``key``) and gives per walk ``(detached probability,
    mask empty)``, or None: the walk ended before frame ``j``. With ``stop_when_empty`` a
    walk ends after an empty frame at or past ``last`` (``on_stop(state, j)``: the first
    visit it skips). Progress counts every visit, run or skipped.
    """
    total, done = sum(len(s.frames) for s in states), 0

    def add(k: int = 1) -> None:  # k more visits done (run or skipped)
        nonlocal done
        done += k
        if options.progress is not None:
            options.progress(done, total)

    number = {id(s): i for i, s in enumerate(states)}
    for j in range(max((len(s.frames) for s in states), default=0)):
        groups: dict[Any, list] = {}
        for s in states:
            if not s.stopped and j < len(s.frames):
                groups.setdefault(key(s) if batch else id(s), []).append(s)
        for group in groups.values():
            check_cancel(options.cancel, what)
            for s, result in zip(group, step(group, j)):
                if result is None:
                    s.stopped = True
                    add(len(s.frames) - j)
                    continue
                if options.on_frame is not None:
                    options.on_frame(number[id(s)], s.frames[j], result[0])
                add()
                if result[1] and options.stop_when_empty and j >= s.last:
                    s.stopped = True
                    if j + 1 < len(s.frames):
                        add(len(s.frames) - j - 1)
                        if on_stop is not None:
                            on_stop(s, j + 1)
