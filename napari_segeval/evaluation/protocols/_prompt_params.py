"""The promptable protocols' parameters (``medsam2-3d``, ``medsam2-video``, ``interactive``):
a shared head, NSD's ``tolerance_mm`` (not in ``medsam2-video``), the shared options, and
``models`` (see ``docs/protocols.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.protocols._params import (
    Models,
    Params,
    choice,
    empty,
    number,
    tolerance,
)
from napari_segeval.models.precision import PRECISION_CHOICES


@dataclass(frozen=True)
class _Head(Params):
    """The promptable protocols' first parameters."""

    model: str | None = "builtin"
    device: str | None = None
    window: Any = None
    jitter: int = number(0, "a whole number of pixels >= 0", lambda v: v >= 0, whole=True)
    seed: int = number(0, "a whole number", whole=True)


@dataclass(frozen=True)
class _Tolerance(_Head):
    """``tolerance_mm`` of NSD (``medsam2-video`` has none: no surface metrics)."""

    tolerance_mm: float = tolerance()


@dataclass(frozen=True)
class _Tail(_Head):
    """The promptable protocols' options and their checks."""

    empty: str = empty()
    keep_largest: bool = True
    channel: int = 0
    modality: str | None = None
    ct_mapping: str = choice("window", ("window", "minmax"))
    resize: str = choice("float", ("float", "pillow"))
    connectivity: int = choice(6, (6, 18, 26))
    decision: str = choice("probability", ("probability", "logit"))
    stop_when_empty: bool = True
    scoring: str = choice("merged", ("merged", "per-structure", "ordered"))
    jitter_mode: str = choice("edges", ("edges", "outward"))
    prompt: str = choice("box", ("box", "mask", "box3d"))
    nsd_min_dice: float | None = number(
        None, "null or a number in [0, 1]", lambda v: 0 <= v <= 1, null=True
    )
    prompts: str | None = None
    precision: str = choice("auto", PRECISION_CHOICES)

    def image_channel(self) -> int:
        """The ``channel`` parameter."""
        return self.channel

    def mask_prompts(self) -> bool:
        """Whether ``prompt`` is ``mask``."""
        return self.prompt == "mask"

    def propagation_options(self) -> dict[str, Any]:
        """``keep_largest``, ``stop_when_empty``, ``connectivity`` and ``decision``."""
        return {
            "keep_largest": bool(self.keep_largest),
            "stop_when_empty": bool(self.stop_when_empty),
            "connectivity": self.connectivity,
            "decision": self.decision,
        }

    def check(self) -> None:
        """The fields' rules, then: ``prompt=box3d`` needs a model with the challenge's loop,
        ``modality`` and ``window`` must be known, ``prompts`` a folder, and ``precision`` one
        that each model of the run and this machine can run.
        """
        from napari_segeval.io.case import MODALITIES
        from napari_segeval.models.registry import capabilities_of

        super().check()
        if self.prompt == "box3d" and not getattr(capabilities_of(str(self.model)), "box3d", False):
            raise SegEvalError(
                f"parameter prompt=box3d is the CVPR 2024 challenge's 3D loop of "
                f"LiteMedSAM: use --model litemedsam (got {self.model})"
            )
        modality = self.modality
        if modality is not None and str(modality).lower() not in {m.lower() for m in MODALITIES}:
            raise SegEvalError(
                f"parameter modality must be null or one of {', '.join(MODALITIES)}, "
                f"got {modality!r}"
            )
        if self.window is not None:
            from napari_segeval.inference.windowing import parse_window

            try:
                parse_window(self.window)
            except SegEvalError as exc:
                raise SegEvalError(f"parameter window: {exc}") from None
        if self.prompts is not None and not Path(str(self.prompts)).is_dir():
            raise SegEvalError(
                f"parameter prompts must be a folder of <case>.prompts.json files, "
                f"got {self.prompts!r}"
            )
        if self.precision != "auto":
            self.precisions()

    def precisions(self) -> dict[str, str]:
        """The precision each model of the run computes in here (refused when it cannot)."""
        from napari_segeval.models.registry import precision_of

        refs: list = (self.models if isinstance(self, Models) else None) or [self.model]
        return {r: str(precision_of(r, self.precision, self.device)) for r in refs if r}


@dataclass(frozen=True)
class PromptParams(_Tail, _Tolerance):
    """The promptable protocols' parameters (``medsam2-3d``'s without ``models``)."""


@dataclass(frozen=True)
class Medsam2Params(Models, PromptParams):
    """``medsam2-3d``'s parameters: :class:`PromptParams` and ``models``."""


@dataclass(frozen=True)
class VideoParams(Models, _Tail):
    """``medsam2-video``'s parameters: :class:`PromptParams` less ``tolerance_mm`` (a clip has no
    surface metrics; its rows use the fixed tolerance), and ``models``.
    """

    tolerance_mm: ClassVar[float] = 2.0


#: What the promptable recipe reads: a record of one of the promptable protocols.
Promptable = PromptParams | VideoParams
