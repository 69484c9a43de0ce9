"""Bidirectional slice propagation (volumes) and forward propagation (videos).

Works with any :class:`~napari_segeval.models.base.PromptableModel`.
"""

from napari_segeval.propagation.core import (
    PropagationResult,
    largest_component,
    merge_structures,
    propagate_case,
    propagate_structure,
    total_steps,
)

__all__ = [
    "PropagationResult",
    "largest_component",
    "merge_structures",
    "propagate_case",
    "propagate_structure",
    "total_steps",
]
