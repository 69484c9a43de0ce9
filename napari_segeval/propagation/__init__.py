"""Bidirectional slice propagation (volumes) and forward propagation (videos).

Works with any :class:`~napari_segeval.models.base.PromptableModel`.
"""

from napari_segeval.propagation.core import (
    PropagationResult,
    combine_walks,
    confidence_stop,
    largest_component,
    merge_structures,
    propagate_case,
    propagate_structure,
    resolve_min_confidence,
    run_walks,
    total_steps,
)

__all__ = [
    "PropagationResult",
    "combine_walks",
    "confidence_stop",
    "largest_component",
    "merge_structures",
    "propagate_case",
    "propagate_structure",
    "resolve_min_confidence",
    "run_walks",
    "total_steps",
]
