"""Bidirectional slice propagation (volumes), forward propagation (videos), 2D images.

Works with any :class:`~napari_segeval.models.base.PromptableModel`.
:func:`propagate_image` starts from a raw image of any kind (a single 2D image is
a one-frame video); :func:`propagate_case` from normalized frames.
"""

from napari_segeval.propagation.core import (
    PropagationResult,
    propagate_case,
    propagate_structure,
    total_steps,
)
from napari_segeval.propagation.images import (
    KINDS,
    as_frames,
    promptable_kind,
    propagate_image,
    propagation_mode,
    squeeze_frame,
)
from napari_segeval.propagation.masks import largest_component, merge_structures, structure_masks
from napari_segeval.propagation.walks import (
    combine_walks,
    confidence_stop,
    resolve_min_confidence,
    run_walks,
)

__all__ = [
    "KINDS",
    "PropagationResult",
    "as_frames",
    "combine_walks",
    "confidence_stop",
    "largest_component",
    "merge_structures",
    "propagate_case",
    "propagate_image",
    "propagate_structure",
    "propagation_mode",
    "promptable_kind",
    "resolve_min_confidence",
    "run_walks",
    "squeeze_frame",
    "structure_masks",
    "total_steps",
]
