"""The promptable-backend interface every prompted model implements.

A backend segments one structure through a stack of frames from its prompt set, one
:class:`~napari_segeval.models.walk.Walk` (one direction) at a time; the bidirectional loop
and merging live in :mod:`napari_segeval.propagation` (docs/design.md, "How to add a model").
``frames`` are in the model's normalized units (:meth:`PromptableModel.preprocess`) at the
case's native size. A walk returns foreground **probabilities** ``(n_visited, H, W)`` in
visit order (:func:`~napari_segeval.models.walk.visit_indices`; zero after an early stop);
with ``grad=True`` it is differentiable back to ``frames`` (the prior passed between steps
is the soft probability, no autocast).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._errors import InvalidPromptError, SegEvalError
from napari_segeval.models.precision import Precision
from napari_segeval.models.walk import WALK_DEFAULTS, Order, Walk, WalkOptions
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet

if TYPE_CHECKING:  # pragma: no cover
    import threading

    import torch

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class NormalizeInfo:
    """How raw intensities map to a model's normalized input units.

    Parameters
    ----------
    raw_per_normalized_unit : float
        Raw units (HU, grey levels) per normalized unit in the linear part; with
        per-channel scaling the smallest channel factor (``description`` says so).
    valid_min, valid_max : float
        Normalized values of the lowest and highest raw intensity preprocessing can
        produce (the clamp for perturbed inputs; per-channel: the loosest bound).
    description : str
        One line for people, e.g. ``"CT window W=400 L=40 -> [0, 1]"``.
    """

    raw_per_normalized_unit: float
    valid_min: float
    valid_max: float
    description: str = ""


class Corrections(Enum):
    """Which prompts of a volume's prompt set correct the result in place.

    ``NONE``: the whole set propagates at once. ``POINTS``: every point after the last box
    or mask prompt corrects the result before it. ``BOXES``: every box after the first
    restarts the walk from its slice. :mod:`napari_segeval.propagation.corrections`
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
        Whether it takes box, point and mask prompts (others are refused in one line).
    corrections : Corrections
        Which later prompts correct a volume's result in place.
    gradients : bool
        Whether ``grad=True`` gives a result differentiable with respect to the frames.
    prior_volume : bool
        Whether it takes ``prior_volume`` (each slice conditioned on a given mask).
    reason : str
        Why some prompt kinds are not taken (shown on the viewer's greyed tools).
    stop_confidence : float or None
        The confidence stop ``min_confidence="auto"`` applies; None: no stop.
    logits, frame_features, box3d : bool
        Read from the class (:meth:`of`), never given: whether it overrides
        :meth:`PromptableModel.walk_logits`, :meth:`PromptableModel.feature_cache` and
        :meth:`PromptableModel.challenge_3d`.
    resize_modes : tuple of str
        The frame resizings it offers (:meth:`PromptableModel.with_options`), the first
        its default; empty: no option.
    precisions : tuple of Precision
        The arithmetic it offers, fastest first (default fp32 only).
    auto_precisions : tuple of Precision
        Those of ``precisions`` measured to keep its masks: ``--precision auto`` takes
        the first this machine runs (fp32 otherwise).

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
        """These capabilities with the flags read from the methods ``backend`` implements.

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
        plural = {"box": "boxes", "point": "points", "mask": "mask prompts"}
        taken = " and ".join(plural[k] for k in plural if self.takes(k)) or "no prompts"
        why = f": {self.reason}" if self.reason else ""
        return f"{model} takes {taken}, not {plural[kind]}{why}"


def prompt_kind(prompt: Any) -> str:
    """``"box"``, ``"point"`` or ``"mask"`` for a prompt object.

    Examples
    --------
    >>> prompt_kind(Box(0, 0, 2, 2))
    'box'
    """
    for cls, kind in ((Box, "box"), (Point, "point"), (MaskPrompt, "mask")):
        if isinstance(prompt, cls):
            return kind
    raise TypeError(f"not a prompt: {type(prompt).__name__}")


def check_prompt_kinds(capabilities: Capabilities, prompts: Any, model: str) -> None:
    """Refuse the first prompt (of prompt sets, walks or prompts) ``capabilities`` does not take.

    Examples
    --------
    >>> from napari_segeval.prompts.prompt_set import Point, PromptSet
    >>> check_prompt_kinds(Capabilities(), [PromptSet.of([Point(1, 1)])], "m")
    Traceback (most recent call last):
    ...
    napari_segeval._errors.InvalidPromptError: m takes boxes, not points
    """
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

    A backend sets ``name``, ``device`` and ``capabilities`` and implements
    :meth:`preprocess`, :meth:`normalize_info` and :meth:`propagate_walks`; the other
    walk methods have defaults.

    Attributes
    ----------
    name : str
        Short identifier (``"builtin"``, ``"medsam2"``), recorded in results.
    device : torch.device
        Where the model's parameters live; the walks move ``frames`` there.
    capabilities : Capabilities
        What it takes and does.
    resize : str or None
        Its frame resizing, one of ``capabilities.resize_modes``; None: no choice.
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

    @classmethod
    def declared_capabilities(cls) -> Capabilities | None:
        """:attr:`capabilities` read from the class, without building a model."""
        return cls.capabilities  # type: ignore[return-value]  # a Capabilities on the class

    def preprocess(
        self, image: np.ndarray, modality: str, window: str | tuple[float, float] | None = None
    ) -> torch.Tensor:
        """Map raw intensities ``(n, H, W[, 3])`` to a float32 CPU tensor of normalized units.

        ``window``: a CT preset name or ``(width, level)``; None: the modality's default.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement preprocess")

    def normalize_info(
        self,
        modality: str,
        window: str | tuple[float, float] | None = None,
        image: np.ndarray | None = None,
    ) -> NormalizeInfo:
        """The mapping :meth:`preprocess` applies (``image``: for MR/PET percentiles only)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement normalize_info")

    def propagate_walks(
        self, frames: Any, walks: list[Walk], options: WalkOptions = WALK_DEFAULTS
    ) -> list[Any]:
        """Foreground probabilities of each walk, in the order of ``walks``.

        Each is ``(n_visited, H, W)`` in visit order (a
        :class:`~napari_segeval.models.walk.WalkOutput` with ``options.crops``), equal
        to the walk's own :meth:`propagate` call: sharing changes the cost, never the result.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement propagate_walks")

    def walk_logits(
        self, frames: Any, walks: list[Walk], options: WalkOptions = WALK_DEFAULTS
    ) -> list[Any]:
        """Like :meth:`propagate_walks` but logits; default: the probabilities' logit."""
        import torch

        outs = self.propagate_walks(frames, walks, replace(options, crops=True))
        outs = [o.map(lambda v: torch.logit(v.float()), float("-inf")) for o in outs]
        return outs if options.crops else [o.full() for o in outs]

    def with_options(self, *, resize: str | None = None) -> PromptableModel:
        """A copy with ``resize`` (one of ``capabilities.resize_modes``); default: none offered."""
        if resize is not None:
            raise SegEvalError(f"{self.name} offers no resize option, got resize={resize!r}")
        return self

    def feature_cache(self) -> Any:
        """A per-case cache of frame features for ``options.features``; None: none kept."""
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
        """The CVPR 2024 challenge's 3D loop (:attr:`Capabilities.box3d`); refused here."""
        raise SegEvalError(f"{self.name} does not run the CVPR 2024 challenge's 3D loop")

    def propagate(
        self,
        frames: torch.Tensor | np.ndarray,
        key_index: int,
        box: Box | PromptSet,
        order: Order = "forward",
        *,
        prior_volume: Any = None,
        options: WalkOptions = WALK_DEFAULTS,
    ) -> torch.Tensor:
        """Walk ``Walk(key_index, box, order)`` (a box or a whole prompt set).

        Parameters
        ----------
        frames : tensor or array, ``(n, H, W)`` or ``(n, H, W, C)``
            Normalized input (:meth:`preprocess`).
        key_index : int
            The start frame (a box's frame, or one of the set's conditioning frames).
        box : Box or PromptSet
            A box in native coordinates of the start frame, or the structure's prompt set.
        order : {"forward", "backward"}
            Walk towards the last frame or towards frame 0.
        prior_volume : optional ``(n, H, W)``
            Condition each frame on this volume at the previously visited frame instead
            of the model's own output (the attacks' per-slice chain); memory-bank
            backends refuse it.
        options : WalkOptions
            How the walk runs; ``crops`` does not apply.

        Returns
        -------
        torch.Tensor
            ``(n_visited, H, W)`` foreground probabilities in visit order.
        """
        walk = Walk(int(key_index), box, order, prior_volume)
        return self.propagate_walks(frames, [walk], replace(options, crops=False))[0]

    def propagate_logits(
        self,
        frames: Any,
        key_index: int,
        box: Any,
        order: Order = "forward",
        *,
        prior_volume: Any = None,
        options: WalkOptions = WALK_DEFAULTS,
    ) -> torch.Tensor:
        """Like :meth:`propagate` but native-size logits (:meth:`walk_logits`)."""
        walk = Walk(int(key_index), box, order, prior_volume)
        return self.walk_logits(frames, [walk], replace(options, crops=False))[0]
