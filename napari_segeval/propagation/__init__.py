"""Bidirectional slice propagation (volumes), forward propagation (videos), 2D images.

Works with any :class:`~napari_segeval.models.base.PromptableModel`.
:func:`propagate_image` starts from a raw image of any kind (a single 2D image is
a one-frame video); :func:`propagate_case` from normalized frames.

The walk machinery backends share (:mod:`.walks`: ``run_walks``, ``combine_walks``,
``confidence_stop``) and the helpers of the modules (``as_frames``,
``squeeze_frame``, ``total_steps``, ``structure_masks``) are imported from their
modules; they are not part of the package's API.
"""

from napari_segeval.propagation.core import (
    PropagationResult,
    propagate_case,
    propagate_structure,
)
from napari_segeval.propagation.images import (
    KINDS,
    promptable_kind,
    propagate_image,
    propagation_mode,
)
from napari_segeval.propagation.masks import largest_component, merge_structures

__all__ = [
    "KINDS",
    "PropagationResult",
    "largest_component",
    "merge_structures",
    "promptable_kind",
    "propagate_case",
    "propagate_image",
    "propagate_structure",
    "propagation_mode",
]
