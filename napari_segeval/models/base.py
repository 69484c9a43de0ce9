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

Walk options
------------
How a walk runs is one :class:`~napari_segeval.models.walk.WalkOptions` record that
every walk method takes: ``progress(done, total)`` after each frame, ``cancel`` (a
:class:`threading.Event` checked before each frame:
:class:`napari_segeval._cancel.Cancelled`), ``stop_when_empty``, ``grad``,
``cache_mb``, ``on_frame``, ``crops`` and ``features``.

With ``grad=False`` the backend runs without autograd (and may use bf16 autocast on
GPU). With ``grad=True`` the whole walk is differentiable: the returned tensor has a
graph back to ``frames`` (the prior mask fed from one step to the next is the *soft*
probability), so attacks and uncertainty methods can back-propagate through
propagation. No autocast is used with ``grad=True``.

Several structures at once
--------------------------
The one method a backend must implement is
:meth:`PromptableModel.propagate_walks`: several
:class:`~napari_segeval.models.walk.Walk` objects (structure x direction) through one
frame stack in one call, each walk's result identical to its own
:meth:`PromptableModel.propagate` call (which is a one-walk ``propagate_walks``). With
``crops=True`` it returns each walk as a :class:`~napari_segeval.models.walk.WalkOutput`
(every frame cropped to where it can be non-zero), so that a case with many
structures never holds a full-size volume per structure. The backend may share
per-frame work between walks (MedSAM2 encodes each frame once per case) and advance
all walks together, one step at a time
(:func:`~napari_segeval.models.walk.walk_steps`), batching them where that pays.
``on_frame(walk number, frame, prob)`` hears each frame's (detached) probability as
soon as it is computed, so that a viewer can show a propagation while it runs
(``propagate_case(on_slice=...)``).

The optional parts are methods with a default in :class:`PromptableModel`:
``walk_logits`` (the decoder's logits; default: the logit of the probabilities),
``feature_cache`` (a per-case cache of frame features, given back as
``features``; default: None, nothing kept) and ``challenge_3d`` (LiteMedSAM's 3D
loop; default: refused). The matching :class:`Capabilities` flags (``logits``,
``frame_features``, ``box3d``) are read from whether the class overrides them: a
backend cannot declare one it does not implement.

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
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval.models.precision import Precision
from napari_segeval.models.walk import WALK_DEFAULTS, Order, Walk, WalkOptions
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
    logits, frame_features, box3d : bool
        Read from the backend's class, never given (:meth:`of`): whether it overrides
        :meth:`PromptableModel.walk_logits` (its decoder's logits),
        :meth:`PromptableModel.feature_cache` (per-frame features kept for a case) and
        :meth:`PromptableModel.challenge_3d` (the CVPR 2024 challenge's 3D loop,
        ``prompt=box3d`` of the promptable protocols).
    resize_modes : tuple of str
        The ways it offers to resize a frame to its input size, the first its default
        (MedSAM2: ``("float", "pillow")``); a model offering some overrides
        :meth:`PromptableModel.with_options` (``resize=MODE``: a copy with that mode) and
        sets ``resize`` (its mode). Empty: one fixed way, no option.
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
    logits: bool = field(default=False, init=False)
    frame_features: bool = field(default=False, init=False)
    box3d: bool = field(default=False, init=False)
    resize_modes: tuple[str, ...] = ()
    precisions: tuple[Precision, ...] = (Precision.FP32,)
    auto_precisions: tuple[Precision, ...] = (Precision.FP32,)

    def of(self, backend: type) -> Capabilities:
        """These capabilities with :attr:`logits`, :attr:`frame_features` and
        :attr:`box3d` read from the methods ``backend`` implements.

        Examples
        --------
        >>> from napari_segeval.models.threshold import ThresholdPromptModel
        >>> Capabilities().of(ThresholdPromptModel).frame_features
        False
        """
        out = replace(self)
        for flag, method in _IMPLEMENTED.items():
            base = getattr(PromptableModel, method)
            object.__setattr__(out, flag, getattr(backend, method, base) is not base)
        return out

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


#: The :class:`Capabilities` flags read from the methods a backend overrides.
_IMPLEMENTED = {"logits": "walk_logits", "frame_features": "feature_cache", "box3d": "challenge_3d"}


class PromptableModel:
    """A prompted model that propagates masks through frames: the base of every backend.

    A backend subclasses it, sets ``name``, ``device`` and ``capabilities``, and
    implements :meth:`preprocess`, :meth:`normalize_info` and :meth:`propagate_walks`;
    :meth:`walk_logits`, :meth:`feature_cache` and :meth:`challenge_3d` are optional
    (module doc). A class's ``capabilities`` get their implemented flags from the class
    (:meth:`Capabilities.of`).

    Attributes
    ----------
    name : str
        Short identifier (``"builtin"``, ``"medsam2"``), recorded in results.
    device : torch.device
        Where the model's parameters live; the walks move ``frames`` there.
    capabilities : Capabilities
        What it takes and does (prompt kinds, corrections, gradients).
    resize : str or None
        Its way of resizing a frame, one of ``capabilities.resize_modes`` (chosen with
        :meth:`with_options`); None where it offers no choice.
    """

    name: str
    device: Any
    resize: str | None = None
    if TYPE_CHECKING:  # read-only to users; a backend sets it on its class or as a property

        @property
        def capabilities(self) -> Capabilities: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        try:
            caps = cls.capabilities
        except AttributeError:  # set by each instance
            return
        if isinstance(caps, Capabilities):  # not a property
            cls.capabilities = caps.of(cls)

    def preprocess(
        self, image: np.ndarray, modality: str, window: str | tuple[float, float] | None = None
    ) -> torch.Tensor:
        """Map raw intensities ``(n, H, W)`` or ``(n, H, W, 3)`` to normalized units.

        ``window`` is a CT preset name (``"abdomen"``, ``"lung"``, ``"brain"``,
        ``"mediastinum"``) or ``(width, level)``; ``None`` picks the default for
        the modality. Returns a float32 CPU tensor at native size (the same
        ``(n, H, W[, 3])`` layout, or the backend's documented layout).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement preprocess")

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
        raise NotImplementedError(f"{type(self).__name__} does not implement normalize_info")

    def propagate_walks(
        self, frames: Any, walks: list[Walk], options: WalkOptions = WALK_DEFAULTS
    ) -> list[Any]:
        """Foreground probabilities of each walk, in the order of ``walks``.

        Each is ``(n_visited, H, W)`` in visit order (or a
        :class:`~napari_segeval.models.walk.WalkOutput` with ``options.crops``), equal
        to the walk's own :meth:`propagate` call: sharing changes the cost, never the
        result (module doc).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement propagate_walks")

    def walk_logits(
        self, frames: Any, walks: list[Walk], options: WalkOptions = WALK_DEFAULTS
    ) -> list[Any]:
        """Like :meth:`propagate_walks` but logits (mask = ``logits > 0``).

        A backend with its decoder's logits overrides it (:attr:`Capabilities.logits`);
        this default is the logit of :meth:`propagate_walks`'s probabilities
        (``-inf`` where they are 0; ``on_frame`` still hears probabilities).
        """
        import torch

        outs = self.propagate_walks(frames, walks, replace(options, crops=True))
        outs = [o.map(lambda v: torch.logit(v.float()), float("-inf")) for o in outs]
        return outs if options.crops else [o.full() for o in outs]

    def with_options(self, *, resize: str | None = None) -> PromptableModel:
        """This model with other options: ``resize`` one of ``capabilities.resize_modes``
        (None: unchanged).

        A backend offering options overrides it and returns a copy; this default offers
        none: it returns the model itself and refuses a ``resize`` (one line).
        """
        if resize is not None:
            from napari_segeval._errors import SegEvalError

            raise SegEvalError(f"{self.name} offers no resize option, got resize={resize!r}")
        return self

    def feature_cache(self) -> Any:
        """A per-case cache of frame features, given back as ``options.features``; None
        (this default): the backend keeps none (:attr:`Capabilities.frame_features`)."""
        return None

    def challenge_3d(
        self,
        frames: Any,
        boxes: list[Any],
        *,
        progress: Any = None,
        cancel: threading.Event | None = None,
        features: Any = None,
    ) -> dict[int, np.ndarray]:
        """The CVPR 2024 challenge's 3D loop (:attr:`Capabilities.box3d`); refused here.

        Raises
        ------
        napari_segeval.SegEvalError
            Always: the backend does not run it (one line).
        """
        from napari_segeval._errors import SegEvalError

        raise SegEvalError(f"{self.name} does not run the CVPR 2024 challenge's 3D loop")

    def propagate(
        self,
        frames: torch.Tensor | np.ndarray,
        key_index: int,
        box: Box | PromptSet,
        order: Order = "forward",
        *,
        init_mask: torch.Tensor | np.ndarray | None = None,
        prior_volume: Any = None,
        options: WalkOptions = WALK_DEFAULTS,
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
        prior_volume : optional ``(n, H, W)``
            Masks (or probabilities) of the whole sequence, e.g. a clean prediction.
            When given, each frame after the key frame is conditioned on
            ``prior_volume`` at the previously visited frame instead of on the
            model's own previous output, so the frames are segmented one by one
            (the "per-slice" chain of promptable attacks). Backends whose state is
            not a single previous mask (MedSAM2's memory bank) refuse it.
        options : WalkOptions
            How the walk runs (module doc); ``crops`` does not apply.

        Returns
        -------
        torch.Tensor
            ``(n_visited, H, W)`` foreground probabilities in visit order.
        """
        walk = Walk(int(key_index), box, order, init_mask, prior_volume)
        return self.propagate_walks(frames, [walk], replace(options, crops=False))[0]

    def propagate_logits(
        self,
        frames: torch.Tensor | np.ndarray,
        key_index: int,
        box: Box | PromptSet,
        order: Order = "forward",
        *,
        init_mask: torch.Tensor | np.ndarray | None = None,
        prior_volume: Any = None,
        options: WalkOptions = WALK_DEFAULTS,
    ) -> torch.Tensor:
        """Like :meth:`propagate` but native-size logits (:meth:`walk_logits`)."""
        walk = Walk(int(key_index), box, order, init_mask, prior_volume)
        return self.walk_logits(frames, [walk], replace(options, crops=False))[0]
