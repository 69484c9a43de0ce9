"""The promptable-backend interface every prompted model implements.

A *promptable model* segments one structure through a stack of frames (the
slices of a volume or the frames of a video) from its prompts
(:class:`~napari_segeval.prompts.prompt_set.PromptSet`: boxes, positive and
negative points, mask prompts on any frames), walking in one direction. The
bidirectional loop, multi-structure merging and post-processing live in
:mod:`napari_segeval.propagation`; a backend only implements one direction.

Walks
-----
A :class:`Walk` starts at a conditioning frame (a frame that carries prompts) and
visits the frames in its order up to the end of the stack; on every visited frame
that carries prompts it applies that frame's prompts, one at a time in the order
given (SAM2's interactive rules: :mod:`napari_segeval.prompts.prompt_set`). How a
prompt acts is the backend's (MedSAM2: SAM2's ``add_new_points_or_box`` and
``add_new_mask`` on every conditioning frame before the walk, all of them in its
memory; the built-in model: a box or the frame's clicks refine the frame it
reaches, a mask prompt is the frame's output). A walk never ends early (an empty
frame, a low-confidence frame) before its last conditioning frame.
:func:`napari_segeval.propagation.propagate_case` makes, per structure, a forward
walk from the set's first conditioning frame and (volumes) a backward walk from its
last one. A model that cannot take some kind of prompt raises
:class:`~napari_segeval.InvalidPromptError` with one line saying so; its attribute
``takes_points`` (read with ``getattr(model, "takes_points", False)``) tells a viewer
whether to offer point tools.

Units
-----
``frames`` are always given in the model's **normalized input units** (what
:meth:`PromptableModel.preprocess` returns), at the case's native in-plane
size. Attacks perturb these tensors directly; :meth:`normalize_info` tells
how many raw units (HU, grey levels) one normalized unit is, so an epsilon can
be reported to people in raw units, and which normalized range corresponds to
valid raw intensities (for clamping perturbed inputs).

Return value
------------
``propagate`` returns foreground **probabilities** (not logits), one per
visited frame, in *visit order*: element ``0`` is the start frame; for
``order="forward"`` element ``j`` is frame ``key_index + j`` (``n - key_index``
elements), for ``order="backward"`` element ``j`` is frame ``key_index - j``
(``key_index + 1`` elements). Frames after an early stop
(``stop_when_empty=True``) are all zero. Shape ``(n_visited, H, W)`` at the
native size of ``frames``.

Progress and cancel
-------------------
``progress(done, total)`` is called after each frame with ``total =
n_visited`` (and once with ``(total, total)`` on an early stop). ``cancel`` is a
:class:`threading.Event` (or ``None``) checked before each frame; when set,
:class:`napari_segeval._cancel.Cancelled` is raised (see
:func:`napari_segeval._cancel.check_cancel`).

Gradients
---------
With ``grad=False`` the backend runs without autograd (and may use bf16
autocast on GPU). With ``grad=True`` the whole walk is differentiable: the
returned tensor has a graph back to ``frames`` (the prior mask fed from one
step to the next is the *soft* probability), so attacks and uncertainty methods
can back-propagate through propagation. No autocast is used with ``grad=True``.

Several structures at once
--------------------------
A backend may also implement ``propagate_walks(frames, walks, ...)`` (see
:class:`SharedPropagation`): several :class:`Walk` objects (structure x direction)
through one frame stack in one call, each walk's result identical to its own
:meth:`PromptableModel.propagate` call. With ``crops=True`` it returns each walk as
a :class:`WalkOutput` (every frame cropped to where it can be non-zero), so that a
case with many structures never holds a full-size volume per structure. The backend may then share per-frame work
between walks (MedSAM2 encodes each frame once per case) and advance all walks
together, one step at a time (:func:`walk_steps`), batching them where that pays.
:func:`napari_segeval.propagation.propagate_case` uses it when present.
Either method may take an optional ``on_frame(walk number, frame, prob)`` keyword,
called with each frame's (detached) probability as soon as it is computed, so that
a viewer can show a propagation while it runs (``propagate_case(on_slice=...)``).

This module imports nothing heavy at import time (``torch`` only for typing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from napari_segeval.prompts.box import Box

if TYPE_CHECKING:  # pragma: no cover
    import threading

    import torch

    from napari_segeval.prompts.prompt_set import PromptSet

Order = Literal["forward", "backward"]
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class NormalizeInfo:
    """How raw intensities map to a model's normalized input units.

    Parameters
    ----------
    raw_per_normalized_unit : float
        Raw units (HU for CT, grey levels for US/video) per one normalized unit,
        in the linear part of the mapping. An epsilon ``e`` in normalized units
        is ``e * raw_per_normalized_unit`` raw units. For a backend with
        per-channel scaling (ImageNet std) this is the *smallest* of the channel
        factors (the most conservative conversion) and ``description`` says so.
    valid_min, valid_max : float
        Normalized values of the lowest and highest raw intensity the
        preprocessing can produce (for example the window edges): a perturbed
        input should be clamped to this range. Per-channel backends give the
        loosest bound over channels.
    description : str
        One line for people, e.g. ``"CT window W=400 L=40 -> [0, 1]"``.

    Examples
    --------
    >>> info = NormalizeInfo(400.0, 0.0, 1.0, "CT window W=400 L=40 -> [0, 1]")
    >>> info.to_raw(8 / 255)  # doctest: +ELLIPSIS
    12.54...
    """

    raw_per_normalized_unit: float
    valid_min: float
    valid_max: float
    description: str = ""

    def to_raw(self, eps_normalized: float) -> float:
        """Convert an epsilon in normalized units to raw units."""
        return float(eps_normalized) * self.raw_per_normalized_unit


@runtime_checkable
class PromptableModel(Protocol):
    """A prompted model that propagates a mask through frames in one direction.

    Attributes
    ----------
    name : str
        Short identifier (``"builtin"``, ``"medsam2"``), recorded in results.
    device : torch.device
        Where the model's parameters live; ``propagate`` moves ``frames`` there.
    """

    name: str
    device: Any

    def preprocess(
        self, image: np.ndarray, modality: str, window: str | tuple[float, float] | None = None
    ) -> torch.Tensor:
        """Map raw intensities ``(n, H, W)`` or ``(n, H, W, 3)`` to normalized units.

        ``window`` is a CT preset name (``"abdomen"``, ``"lung"``, ``"brain"``,
        ``"mediastinum"``) or ``(width, level)``; ``None`` picks the default for
        the modality. Returns a float32 CPU tensor at native size (the same
        ``(n, H, W[, 3])`` layout, or the backend's documented layout).
        """
        ...

    def normalize_info(
        self,
        modality: str,
        window: str | tuple[float, float] | None = None,
        image: np.ndarray | None = None,
    ) -> NormalizeInfo:
        """Describe the mapping :meth:`preprocess` applies for this modality/window.

        ``image`` (raw) is needed only for data-dependent mappings (MR/PET
        percentile clipping); CT windows and 8-bit video do not need it.
        :mod:`napari_segeval.inference.windowing` implements the shared raw -> [0, 1]
        step (CT presets, MR percentiles, 8-bit) that backends build on.
        """
        ...

    def propagate(
        self,
        frames: torch.Tensor | np.ndarray,
        key_index: int,
        box: Box | PromptSet,
        order: Order = "forward",
        *,
        init_mask: torch.Tensor | np.ndarray | None = None,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
        stop_when_empty: bool = False,
        grad: bool = False,
        prior_volume: Any = None,
    ) -> torch.Tensor:
        """Walk ``Walk(key_index, box, order)`` (a box or a whole prompt set).

        Parameters
        ----------
        frames : tensor or array, ``(n, H, W)`` or ``(n, H, W, C)``
            Normalized input (see :meth:`preprocess`).
        key_index : int
            The walk's start: for a :class:`Box`, the frame it is drawn on
            (``box.index`` is informational here); for a prompt set, one of its
            conditioning frames.
        box : Box or PromptSet
            A box in native array coordinates of the start frame, or the structure's
            prompt set (:class:`Walk`).
        order : {"forward", "backward"}
            Walk towards the last frame or towards frame 0.
        init_mask : optional ``(H, W)``
            Legacy: a mask prompt on the start frame instead of the box.
        progress, cancel, stop_when_empty, grad
            See the module docstring.
        prior_volume : optional ``(n, H, W)``
            Masks (or probabilities) of the whole sequence, e.g. a clean prediction.
            When given, each frame after the key frame is conditioned on
            ``prior_volume`` at the previously visited frame instead of on the
            model's own previous output, so the frames are segmented one by one
            (the "per-slice" chain of promptable attacks). Backends whose state is
            not a single previous mask (MedSAM2's memory bank) refuse it.

        Returns
        -------
        torch.Tensor
            ``(n_visited, H, W)`` foreground probabilities in visit order.
        """
        ...


def n_visited(n_frames: int, key_index: int, order: Order) -> int:
    """Number of frames ``propagate`` visits (and returns) for one direction.

    Examples
    --------
    >>> n_visited(10, 4, "forward"), n_visited(10, 4, "backward")
    (6, 5)
    """
    if not 0 <= key_index < n_frames:
        raise ValueError(f"key index {key_index} outside 0..{n_frames - 1}")
    if order == "forward":
        return n_frames - key_index
    if order == "backward":
        return key_index + 1
    raise ValueError(f"order must be 'forward' or 'backward', got {order!r}")


def visit_indices(n_frames: int, key_index: int, order: Order) -> np.ndarray:
    """Frame indices in visit order (element 0 is the key frame).

    Examples
    --------
    >>> visit_indices(5, 2, "backward").tolist()
    [2, 1, 0]
    """
    k = n_visited(n_frames, key_index, order)
    step = 1 if order == "forward" else -1
    return key_index + step * np.arange(k)


@dataclass(frozen=True, eq=False)
class Walk:
    """One structure walked in one direction from one of its conditioning frames.

    A walk starts at ``start`` (a frame that carries prompts) and visits the frames in
    its ``order`` up to the end of the stack; on every visited frame that carries
    prompts it applies that frame's prompts in the order given (module doc of
    :mod:`napari_segeval.prompts.prompt_set`). The fields are what
    :meth:`PromptableModel.propagate` needs for that call.

    Parameters
    ----------
    start : int
        The first frame visited: by default the set's ``first_frame`` (forward) or
        ``last_frame`` (backward).
    prompts : PromptSet or Box
        The structure's prompts. A :class:`~napari_segeval.prompts.box.Box` is the
        one-line case: one box on ``start`` (its ``index`` is moved there).
    order : {"forward", "backward"}
        Towards the last frame or towards frame 0.
    init_mask : optional ``(H, W)``
        Legacy: a mask prompt on ``start`` instead of the box (as a
        :class:`~napari_segeval.prompts.prompt_set.MaskPrompt`).
    prior_volume : optional ``(n, H, W)``
        Per-slice chain (see :meth:`PromptableModel.propagate`).

    Examples
    --------
    >>> w = Walk(3, Box(0, 0, 2, 2, index=3), "backward")
    >>> w.frames(10).tolist(), w.box, w.conditioning
    ([3, 2, 1, 0], Box(y0=0, x0=0, y1=2, x1=2, index=3, label=1), (3,))
    >>> from napari_segeval.prompts.prompt_set import Point, PromptSet
    >>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 1, index=6, positive=False)])
    >>> Walk.of(s, "backward").start, Walk.of(s, "forward").frames(8).tolist()
    (6, [2, 3, 4, 5, 6, 7])
    """

    start: int
    prompts: Any
    order: Order = "forward"
    init_mask: InitVar[Any] = None
    prior_volume: Any = None

    def __post_init__(self, init_mask: Any) -> None:
        from dataclasses import replace

        from napari_segeval.prompts.prompt_set import MaskPrompt, PromptSet

        start = int(self.start)
        prompts = self.prompts
        if isinstance(prompts, Box):
            prompts = PromptSet.from_box(prompts if prompts.index == start
                                         else replace(prompts, index=start))
        if not isinstance(prompts, PromptSet):
            raise TypeError(f"a walk takes a PromptSet or a Box, got {type(prompts).__name__}")
        if init_mask is not None:
            prompts = PromptSet(prompts.label, (MaskPrompt(np.asarray(init_mask) > 0, start,
                                                           prompts.label),))
        if not prompts.prompts:
            raise ValueError(f"structure {prompts.label}: a walk needs at least one prompt")
        if start not in prompts.frames:
            raise ValueError(f"a walk starts on a conditioning frame: {start} carries no "
                             f"prompt of structure {prompts.label} (frames {list(prompts.frames)})")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "prompts", prompts)

    @classmethod
    def of(cls, prompts: Any, order: Order = "forward", prior_volume: Any = None) -> Walk:
        """The walk of ``prompts`` in ``order`` from its first (forward) or last (backward) frame."""
        from napari_segeval.prompts.prompt_set import PromptSet

        if isinstance(prompts, Box):
            prompts = PromptSet.from_box(prompts)
        start = prompts.first_frame if order == "forward" else prompts.last_frame
        return cls(start, prompts, order, prior_volume=prior_volume)

    @property
    def key_index(self) -> int:
        """Legacy name of :attr:`start`."""
        return self.start

    @property
    def label(self) -> int:
        """The structure id."""
        return self.prompts.label

    @property
    def box(self) -> Box | None:
        """The first box on :attr:`start` (legacy code that takes one box), else None."""
        return next((p for p in self.prompts.on(self.start) if isinstance(p, Box)), None)

    @property
    def conditioning(self) -> tuple[int, ...]:
        """The conditioning frames this walk visits, in visit order."""
        step = 1 if self.order == "forward" else -1
        frames = [f for f in self.prompts.frames if (f - self.start) * step >= 0]
        return tuple(sorted(frames, reverse=step < 0))

    def frames(self, n_frames: int) -> np.ndarray:
        """Frame indices this walk visits, in visit order (:func:`visit_indices`)."""
        return visit_indices(n_frames, self.start, self.order)

    def last_conditioning_step(self) -> int:
        """Visit position of the last conditioning frame on the way (0: only the start).

        Stops (``stop_when_empty``, the confidence stop) never end a walk before it.

        Examples
        --------
        >>> from napari_segeval.prompts.prompt_set import Point, PromptSet
        >>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 1, index=6)])
        >>> Walk.of(s, "forward").last_conditioning_step(), Walk.of(s, "backward").last_conditioning_step()
        (4, 4)
        """
        return abs(self.conditioning[-1] - self.start)


@dataclass
class WalkOutput:
    """One walk's result, each visited frame kept only where it can differ from ``fill``.

    The cropped form of a walk (``propagate_walks(..., crops=True)``): the built-in
    model computes each frame inside a window around the object and is exactly
    ``fill`` (0) elsewhere, so a structure's result need not hold full-size frames.

    Parameters
    ----------
    frames : list of int
        Visited frames, in visit order.
    boxes : list of (y0, x0, y1, x1) or None
        Each frame's crop on the ``(H, W)`` grid; ``None``: the frame is ``fill``
        everywhere (after a stop).
    values : list of tensor or None
        Each frame's values inside its box, ``(y1 - y0, x1 - x0)``.
    shape : (H, W)
        The frame size.
    fill : float
        The value outside the boxes: 0 for probabilities, ``-inf`` for logits.

    Examples
    --------
    >>> import torch
    >>> out = WalkOutput([3, 4], [(1, 1, 2, 3), None], [torch.ones(1, 2), None], (3, 4))
    >>> out.full().sum(dim=(1, 2)).tolist()
    [2.0, 0.0]
    >>> WalkOutput.from_full([0], torch.ones(1, 2, 2)).boxes
    [(0, 0, 2, 2)]
    """

    frames: list
    boxes: list
    values: list
    shape: tuple
    fill: float = 0.0

    def __len__(self) -> int:
        return len(self.frames)

    @classmethod
    def from_full(cls, frames: Any, tensor: Any, fill: float = 0.0) -> WalkOutput:
        """Full-size rows ``(n_visited, H, W)`` as a walk output (every box the whole frame)."""
        h, w = (int(s) for s in tensor.shape[-2:])
        frames = [int(f) for f in frames]
        return cls(frames, [(0, 0, h, w)] * len(frames), [tensor[j] for j in range(len(frames))],
                   (h, w), fill)

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
        return WalkOutput(list(self.frames), list(self.boxes),
                          [None if v is None else fn(v) for v in self.values], self.shape, fill)


@runtime_checkable
class SharedPropagation(Protocol):
    """Optional capability of a backend: propagate several walks in one call.

    ``propagate_walks`` returns one tensor per walk, in the order of ``walks``, each
    equal to ``propagate(frames, w.start, w.prompts, w.order,
    prior_volume=w.prior_volume, stop_when_empty=..., grad=...)``: sharing changes the
    cost, never the result. ``progress(done, total)`` counts the steps of all walks
    (``total = sum of n_visited``); a walk that stops early adds its remaining steps
    at once. ``cache_mb`` bounds the memory held by features shared between walks
    (``None``: the backend's default). ``crops=True`` (optional keyword) returns
    :class:`WalkOutput` objects instead of full tensors.
    """

    def propagate_walks(
        self,
        frames: Any,
        walks: list[Walk],
        *,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
        stop_when_empty: bool = False,
        grad: bool = False,
        cache_mb: float | None = None,
    ) -> list[torch.Tensor]:
        """Probabilities ``(n_visited, H, W)`` of each walk, in visit order."""
        ...


def walk_steps(n_frames: int, walks: list[Walk]) -> list[list[tuple[int, int]]]:
    """The shared schedule: at step ``j`` every walk visits its ``j``-th frame.

    Element ``j`` lists ``(walk number, frame)`` for the walks that are still
    going at step ``j``; step 0 is each walk's start frame. Advancing all walks
    together keeps every walk's own order while letting a backend batch the walks
    of one step (and share the frames they read).

    Examples
    --------
    >>> walks = [Walk(1, Box(0, 0, 1, 1), "forward"), Walk(1, Box(0, 0, 1, 1), "backward")]
    >>> walk_steps(3, walks)
    [[(0, 1), (1, 1)], [(0, 2), (1, 0)]]
    """
    seqs = [w.frames(n_frames).tolist() for w in walks]
    steps: list[list[tuple[int, int]]] = []
    for j in range(max((len(s) for s in seqs), default=0)):
        steps.append([(i, s[j]) for i, s in enumerate(seqs) if j < len(s)])
    return steps
