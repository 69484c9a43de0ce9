"""Bidirectional slice propagation (volumes), forward propagation (videos), 2D images.

Works with any :class:`~napari_segeval.models.base.PromptableModel`.
:func:`propagate_image` starts from a raw image of any kind (a single 2D image is
a one-frame video); :func:`propagate_case` from normalized frames; a
:class:`PropagationSession` keeps a case's frames, prompts and results so that a
correction re-propagates only the structure it changes.

The walk machinery backends share (:mod:`.walks`:
``confidence_stop``, ``structure_crop``), the merging helpers (:mod:`.masks`:
``merge_crops``, ``structure_masks``) and the helpers of the modules (``as_frames``,
``squeeze_frame``, ``total_steps``, ``make_walks``, ``merge_results``) are imported
from their modules; they are not part of the package's API.
"""

from napari_segeval.propagation.core import (
    propagate_case,
    propagate_structure,
    propagate_structures,
)
from napari_segeval.propagation.images import (
    KINDS,
    promptable_kind,
    propagate_image,
    propagation_mode,
)
from napari_segeval.propagation.masks import largest_component, merge_structures
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult, StructureResult
from napari_segeval.propagation.session import PropagationSession

__all__ = [
    "KINDS",
    "PropagationOptions",
    "PropagationResult",
    "PropagationSession",
    "StructureResult",
    "as_prompt_sets",
    "largest_component",
    "merge_structures",
    "promptable_kind",
    "propagate_case",
    "propagate_image",
    "propagate_structure",
    "propagate_structures",
    "propagation_mode",
]
