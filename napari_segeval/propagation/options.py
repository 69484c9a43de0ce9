"""The settings of :func:`~.core.propagate_case` and the prompt sets it takes."""

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
        Volumes: forward and backward walks, united; videos: the forward walk only.
    keep_largest : bool
        Keep the largest connected component of each structure.
    stop_when_empty : bool
        End a walk at the first empty frame after its last conditioning frame.
    threshold : float
        Probability threshold of the masks (``decision="probability"``).
    connectivity : int, optional
        Neighbours of the largest component (``None``: faces, 6 in 3D; MedSAM2: 26).
    decision : {"probability", "logit"}
        Probability above ``threshold`` (default) or MedSAM2's logit above 0 (the same
        except where float32's sigmoid rounds a tiny positive logit to exactly 0.5).
    min_confidence : float, "auto" or None
        A walk ends, after its last conditioning frame, at the first frame whose mean
        foreground probability is below it; ``"auto"``: ``capabilities.stop_confidence``.
    nested_fraction : float, optional
        Nested-structure rule of :func:`~.masks.merge_structures` (``None``: off).
    grad : bool
        Keep the autograd graph (``result.tensors``).
    share : bool
        Give the backend all structures and directions at once (same result);
        ``False``: one pass per structure.
    cache_mb : float, optional
        Bound (MiB) on a sharing backend's per-frame cache; ``None``: the backend's default.
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

    ``prompts``: a dict ``label -> PromptSet`` (or list of prompts), a list of prompt sets and
    boxes (a box is the one-line set of its structure), or a ``PromptFile``.

    Raises
    ------
    ValueError
        No prompts, or two entries for one structure.

    Examples
    --------
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
