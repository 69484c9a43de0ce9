"""The promptable-backend interface every prompted model implements.

A *promptable model* segments one structure through a stack of frames (the
slices of a volume or the frames of a video) from its prompts
(:class:`~napari_segeval.prompts.prompt_set.PromptSet`: boxes, positive and
negative points, mask prompts on any frames), walking in one direction. The
bidirectional loop, multi-structure merging and post-processing live in
:mod:`napari_segeval.propagation`; a backend only implements one direction.

Walks
-----
A :class:`~napari_segeval.models.walk.Walk` starts at a conditioning frame (a frame that carries prompts) and
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
:class:`~napari_segeval.InvalidPromptError` with one line saying so; what it takes is
declared, not guessed: every backend has a :class:`Capabilities` value ``capabilities``
(boxes, points, mask prompts, which prompts correct a result in place, gradients, a
per-slice prior), which the viewer reads to offer or grey its tools.

Units
-----
``frames`` are always given in the model's **normalized input units** (what
:meth:`PromptableModel.preprocess` returns), at the case's native in-plane
size. Attacks perturb these tensors directly; :meth:`PromptableModel.normalize_info` tells
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
:class:`SharedPropagation`): several :class:`~napari_segeval.models.walk.Walk` objects (structure x direction)
through one frame stack in one call, each walk's result identical to its own
:meth:`PromptableModel.propagate` call. With ``crops=True`` it returns each walk as
a :class:`~napari_segeval.models.walk.WalkOutput` (every frame cropped to where it can be non-zero), so that a
case with many structures never holds a full-size volume per structure. The backend may then share per-frame work
between walks (MedSAM2 encodes each frame once per case) and advance all walks
together, one step at a time (:func:`~napari_segeval.models.walk.walk_steps`), batching them where that pays.
:func:`napari_segeval.propagation.propagate_case` uses it when present.
``propagate_walks`` takes an ``on_frame(walk number, frame, prob)`` keyword, called
with each frame's (detached) probability as soon as it is computed, so that a viewer
can show a propagation while it runs (``propagate_case(on_slice=...)``); ``propagate``
takes it too where ``capabilities.live_frames`` says so. Which of these optional
methods and keywords a backend has is declared in its :class:`Capabilities`
(``shared_walks``, ``logits``, ``frame_features``, ``live_frames``): generic code reads
the declaration and never inspects a signature.

Corrections
-----------
A backend whose ``capabilities.corrections`` is not ``Corrections.NONE`` implements
``correct(frames, prompts, previous, *, min_confidence=None, cancel=None)``: the slices
(``{index: (H, W) probabilities}``) that the last prompt of ``prompts`` changes in a
structure whose masks were ``previous`` (``(n, H, W)``, boolean).
:mod:`napari_segeval.propagation.corrections` then builds a volume's result prompt by
prompt: round 0 propagates, every later prompt corrects (the built-in model). Backends
that declare ``Corrections.NONE`` propagate the whole set.

This module imports nothing heavy at import time (``torch`` only for typing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from napari_segeval.models.precision import Precision
from napari_segeval.models.walk import Order, Walk
from napari_segeval.prompts.box import Box

if TYPE_CHECKING:  # pragma: no cover
    import threading

    import torch

    from napari_segeval.prompts.prompt_set import PromptSet

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


class Corrections(Enum):
    """Which prompts of a volume's prompt set correct the result in place.

    ``NONE``: the whole set propagates at once (SAM2's memory of every prompt).
    ``POINTS``: every point after the set's last box or mask prompt corrects the result
    of the prompts before it (the built-in model's click response). ``BOXES``: every box
    after the first corrects it: the walk restarts from that box in both directions
    (LiteMedSAM's slice-by-slice box chain). :mod:`napari_segeval.propagation.corrections`
    applies the rule.
    """

    NONE = "none"
    POINTS = "points"
    BOXES = "boxes"


@dataclass(frozen=True)
class Capabilities:
    """What a promptable backend takes and does, declared once by the backend.

    Attributes
    ----------
    boxes, points, masks : bool
        Whether it takes box prompts, point prompts (clicks) and mask prompts; a prompt
        it does not take is refused in one line naming the model.
    corrections : Corrections
        Which later prompts correct a volume's result in place (:class:`Corrections`).
    gradients : bool
        Whether ``grad=True`` gives a result differentiable with respect to the frames
        (attacks and uncertainty methods need it).
    prior_volume : bool
        Whether it takes a per-slice prior (``prior_volume``: each slice conditioned on
        a given previous mask instead of its own output).
    reason : str
        For people: why some prompt kinds are not taken (the viewer shows it on the
        greyed tools).
    stop_confidence : float or None
        The calibrated confidence stop that ``min_confidence="auto"`` applies (the
        built-in model's 0.8); None: no stop.
    shared_walks : bool
        Whether it implements :class:`SharedPropagation` (``propagate_walks``: several
        walks in one call, with the keywords ``on_frame`` and ``crops``).
    logits : bool
        Whether it gives its decoder's logits: ``walk_logits`` (the keywords of
        ``propagate_walks``) and ``propagate_logits`` (those of ``propagate``).
    frame_features : bool
        Whether it keeps per-frame features for a case: ``feature_cache()`` returns
        the cache, which its ``propagate_walks`` (and ``walk_logits``) take as
        ``features``.
    live_frames : bool
        Whether ``propagate`` takes ``on_frame`` (reports each frame as it is computed;
        otherwise a walk's frames are reported when it returns).
    box3d : bool
        Whether it runs the CVPR 2024 challenge's 3D loop, ``challenge_3d(frames,
        boxes)`` with one 3D box per structure (``prompt=box3d`` of the promptable
        protocols).
    resize_modes : tuple of str
        The ways it offers to resize a frame to its input size, the first its default
        (MedSAM2: ``("float", "pillow")``); a model offering some implements
        ``with_options(resize=MODE)`` (a copy with that mode) and has ``resize`` (its
        mode). Empty: one fixed way, no option.
    precisions : tuple of Precision
        The arithmetic it offers (:mod:`napari_segeval.models.precision`), fastest
        first. Default: fp32 only.
    auto_precisions : tuple of Precision
        Those of ``precisions`` that keep its masks (measured), fastest first:
        ``--precision auto`` takes the first this machine runs (fp32 otherwise).

    Examples
    --------
    >>> c = Capabilities(points=False, reason="trained with box prompts only")
    >>> c.takes("box"), c.takes("point"), c.refusal("point", "litemedsam")
    (True, False, 'litemedsam takes boxes, not points: trained with box prompts only')
    """

    boxes: bool = True
    points: bool = False
    masks: bool = False
    corrections: Corrections = Corrections.NONE
    gradients: bool = True
    prior_volume: bool = False
    reason: str = ""
    stop_confidence: float | None = None
    shared_walks: bool = False
    logits: bool = False
    frame_features: bool = False
    live_frames: bool = False
    box3d: bool = False
    resize_modes: tuple[str, ...] = ()
    precisions: tuple[Precision, ...] = (Precision.FP32,)
    auto_precisions: tuple[Precision, ...] = (Precision.FP32,)

    def takes(self, kind: str) -> bool:
        """Whether prompts of ``kind`` (``"box"``, ``"point"``, ``"mask"``) are taken."""
        return {"box": self.boxes, "point": self.points, "mask": self.masks}[kind]

    def refusal(self, kind: str, model: str) -> str:
        """The one line that refuses a prompt of ``kind`` for ``model``."""
        taken = [
            k
            for k, on in (
                ("boxes", self.boxes),
                ("points", self.points),
                ("mask prompts", self.masks),
            )
            if on
        ]
        plural = {"box": "boxes", "point": "points", "mask": "mask prompts"}[kind]
        why = f": {self.reason}" if self.reason else ""
        return f"{model} takes {' and '.join(taken) or 'no prompts'}, not {plural}{why}"


def prompt_kind(prompt: Any) -> str:
    """``"box"``, ``"point"`` or ``"mask"`` for a prompt object.

    Examples
    --------
    >>> prompt_kind(Box(0, 0, 2, 2))
    'box'
    """
    from napari_segeval.prompts.prompt_set import MaskPrompt, Point

    if isinstance(prompt, Box):
        return "box"
    if isinstance(prompt, Point):
        return "point"
    if isinstance(prompt, MaskPrompt):
        return "mask"
    raise TypeError(f"not a prompt: {type(prompt).__name__}")


def check_prompt_kinds(capabilities: Capabilities, prompts: Any, model: str) -> None:
    """Refuse (one line, :class:`~napari_segeval.InvalidPromptError`) the first prompt of
    ``prompts`` (prompt sets, walks or prompts) whose kind ``capabilities`` does not take.

    Examples
    --------
    >>> from napari_segeval.prompts.prompt_set import Point, PromptSet
    >>> check_prompt_kinds(Capabilities(), [PromptSet.of([Point(1, 1)])], "m")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.InvalidPromptError: m takes boxes, not points
    """
    from napari_segeval._errors import InvalidPromptError
    from napari_segeval.prompts.prompt_set import PromptSet

    for item in prompts:
        if isinstance(item, Walk):
            item = item.prompts
        for p in item.prompts if isinstance(item, PromptSet) else (item,):
            kind = prompt_kind(p)
            if not capabilities.takes(kind):
                raise InvalidPromptError(capabilities.refusal(kind, model))


@runtime_checkable
class PromptableModel(Protocol):
    """A prompted model that propagates a mask through frames in one direction.

    Attributes
    ----------
    name : str
        Short identifier (``"builtin"``, ``"medsam2"``), recorded in results.
    device : torch.device
        Where the model's parameters live; ``propagate`` moves ``frames`` there.
    capabilities : Capabilities
        What it takes and does (prompt kinds, corrections, gradients).
    """

    name: str
    device: Any
    capabilities: Capabilities

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
            prompt set (:class:`~napari_segeval.models.walk.Walk`).
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


@runtime_checkable
class SharedPropagation(Protocol):
    """Optional capability of a backend: propagate several walks in one call.

    ``propagate_walks`` returns one tensor per walk, in the order of ``walks``, each
    equal to ``propagate(frames, w.start, w.prompts, w.order,
    prior_volume=w.prior_volume, stop_when_empty=..., grad=...)``: sharing changes the
    cost, never the result. ``progress(done, total)`` counts the steps of all walks
    (``total = sum of n_visited``); a walk that stops early adds its remaining steps
    at once. ``cache_mb`` bounds the memory held by features shared between walks
    (``None``: the backend's default). ``crops=True`` returns
    :class:`~napari_segeval.models.walk.WalkOutput` objects instead of full tensors;
    ``on_frame(walk number, frame, prob)`` hears each frame as it is computed. A backend
    with ``capabilities.frame_features`` also takes ``features`` (its
    ``feature_cache()``). A backend declares ``capabilities.shared_walks=True`` when it
    implements this.
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
        on_frame: Callable[[int, int, Any], None] | None = None,
        crops: bool = False,
    ) -> list[Any]:
        """Probabilities ``(n_visited, H, W)`` of each walk, in visit order."""
        ...
