"""How a case is propagated: one options object for :func:`~.core.propagate_case`.

:class:`PropagationOptions` gathers the settings of a propagation (mode, decision
rule, post-processing, stops, gradients, sharing) with the defaults of the project's
recipe; :func:`as_prompt_sets` turns what callers give (a dict of prompt sets, a list
of prompt sets or boxes) into one prompt set per structure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_file import PromptFile
from napari_segeval.prompts.prompt_set import PromptSet

if TYPE_CHECKING:
    from napari_segeval.models.walk import Order

MODES = ("volume", "video")
DECISIONS = ("probability", "logit")


@dataclass(frozen=True)
class PropagationOptions:
    """Settings of :func:`~napari_segeval.propagation.core.propagate_case`.

    Parameters
    ----------
    mode : {"volume", "video"}
        Volumes: a forward walk from each structure's first conditioning frame and a
        backward walk from its last one, united. Videos: the forward walk only.
    keep_largest : bool
        Keep the largest connected component of each structure.
    stop_when_empty : bool
        End a walk at the first empty frame after its last conditioning frame.
    threshold : float
        Probability threshold of the masks (``decision="probability"``).
    connectivity : int, optional
        Neighbours of the largest component (``None``: face connectivity, 6 in 3D;
        MedSAM2: 26).
    decision : {"probability", "logit"}
        Probability above ``threshold`` (default) or MedSAM2's logit above 0.
    min_confidence : float, "auto" or None
        Confidence stop (module doc of :mod:`.core`); ``"auto"``: the model's own
        (``capabilities.stop_confidence``), if it declares one.
    nested_fraction : float, optional
        Nested-structure rule of :func:`~.masks.merge_structures` (``None``: off).
    grad : bool
        Keep the autograd graph (``result.tensors``).
    share : bool
        Give the backend all structures and directions at once (same result, each
        frame's shared work done once); ``False``: one pass per structure.
    cache_mb : float, optional
        Bound (MiB) on the per-frame work a sharing backend keeps (MedSAM2's image
        features); ``None``: the backend's default.

    Examples
    --------
    >>> o = PropagationOptions(mode="video", decision="logit")
    >>> o.mode, o.keep_largest, o.replace(keep_largest=False).keep_largest
    ('video', True, False)
    >>> PropagationOptions(mode="sideways")
    Traceback (most recent call last):
    ...
    ValueError: mode must be one of ('volume', 'video'), got 'sideways'
    """

    mode: str = "volume"
    keep_largest: bool = True
    stop_when_empty: bool = True
    threshold: float = 0.5
    connectivity: int | None = None
    decision: str = "probability"
    min_confidence: float | str | None = "auto"
    nested_fraction: float | None = 0.5
    grad: bool = False
    share: bool = True
    cache_mb: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.decision not in DECISIONS:
            raise ValueError(f"decision must be 'probability' or 'logit', got {self.decision!r}")
        if isinstance(self.min_confidence, str) and self.min_confidence != "auto":
            raise ValueError(
                f"min_confidence must be a number, None or 'auto', got {self.min_confidence!r}"
            )

    @property
    def orders(self) -> tuple[Order, ...]:
        """The walk directions of the mode."""
        return ("forward", "backward") if self.mode == "volume" else ("forward",)

    @property
    def logits(self) -> bool:
        """Whether masks are decided on logits (``decision="logit"``)."""
        return self.decision == "logit"

    @property
    def cut(self) -> float:
        """The value the decision thresholds: 0 (logits) or ``threshold``."""
        return 0.0 if self.logits else float(self.threshold)

    def replace(self, **changes: Any) -> PropagationOptions:
        """A copy with ``changes`` (checked again)."""
        return PropagationOptions(**{**asdict(self), **changes})


def as_prompt_sets(prompts: Any) -> dict[int, PromptSet]:
    """One :class:`PromptSet` per structure, in the order given.

    ``prompts`` is a dict ``label -> PromptSet`` (or a list of prompts), a list of
    prompt sets and boxes (a box is the one-line set of its structure), or a
    :class:`~napari_segeval.prompts.prompt_file.PromptFile`.

    Raises
    ------
    ValueError
        No prompts, or two entries for one structure.

    Examples
    --------
    >>> sets = as_prompt_sets([Box(0, 0, 2, 2, index=1, label=3)])
    >>> list(sets), sets[3].frames
    ([3], (1,))
    >>> as_prompt_sets([Box(0, 0, 2, 2), Box(1, 1, 3, 3)])
    Traceback (most recent call last):
    ...
    ValueError: one box per structure (or one PromptSet): structure 1 is given twice (put its prompts in one PromptSet)
    """
    sets = prompts.sets if isinstance(prompts, PromptFile) else prompts
    items: Iterable[Any]
    if isinstance(sets, Mapping):
        items = [
            v if isinstance(v, PromptSet) else PromptSet.of(v, int(k)) for k, v in sets.items()
        ]
    elif isinstance(sets, (Box, PromptSet)):
        items = [sets]
    else:
        items = list(sets)
    out: dict[int, PromptSet] = {}
    for item in items:
        s = PromptSet.from_box(item) if isinstance(item, Box) else item
        if not isinstance(s, PromptSet):
            raise TypeError(f"expected a PromptSet or a Box, got {type(item).__name__}")
        if s.label in out:
            raise ValueError(
                f"one box per structure (or one PromptSet): structure {s.label} "
                "is given twice (put its prompts in one PromptSet)"
            )
        out[s.label] = s
    if not out:
        raise ValueError("propagation needs at least one prompt")
    return out
