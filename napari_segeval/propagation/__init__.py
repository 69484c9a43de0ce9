"""Propagation of a promptable model's masks through volumes, videos and 2D images.

:func:`propagate_image` starts from a raw image, :func:`propagate_case` from normalized
frames; a :class:`PropagationSession` re-propagates only the structures a correction
changes. Helpers of the submodules are not part of the package's API.
"""

from napari_segeval.propagation.core import propagate_case
from napari_segeval.propagation.images import promptable_kind, propagate_image, propagation_mode
from napari_segeval.propagation.masks import largest_component, merge_structures
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult, StructureResult
from napari_segeval.propagation.session import PropagationSession

__all__ = [
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
    "propagation_mode",
]
