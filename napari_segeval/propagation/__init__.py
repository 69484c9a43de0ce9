"""Bidirectional slice propagation (volumes), forward propagation (videos), 2D images.

Works with any :class:`~napari_segeval.models.base.PromptableModel`.
:func:`propagate_image` starts from a raw image of any kind (a single 2D image is
a one-frame video); :func:`propagate_case` from normalized frames; a
:class:`PropagationSession` keeps a case's frames, prompts and results so that a
correction re-propagates only the structure it changes.
"""

from napari_segeval.propagation.core import (
    make_walks,
    merge_results,
    propagate_case,
    propagate_structure,
    propagate_structures,
    total_steps,
)
from napari_segeval.propagation.images import (
    KINDS,
    as_frames,
    case_kind,
    propagate_image,
    propagation_mode,
    squeeze_frame,
)
from napari_segeval.propagation.masks import (
    largest_component,
    merge_crops,
    merge_structures,
    structure_masks,
)
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult, StructureResult
from napari_segeval.propagation.session import PropagationSession
from napari_segeval.propagation.walks import (
    combine_walks,
    confidence_stop,
    resolve_min_confidence,
    run_walks,
    structure_crop,
)

__all__ = [
    "KINDS",
    "PropagationOptions",
    "PropagationResult",
    "PropagationSession",
    "StructureResult",
    "as_frames",
    "as_prompt_sets",
    "case_kind",
    "combine_walks",
    "confidence_stop",
    "largest_component",
    "make_walks",
    "merge_crops",
    "merge_results",
    "merge_structures",
    "propagate_case",
    "propagate_image",
    "propagate_structure",
    "propagate_structures",
    "propagation_mode",
    "resolve_min_confidence",
    "run_walks",
    "squeeze_frame",
    "structure_crop",
    "structure_masks",
    "total_steps",
]
