"""Uncertainty: per-voxel maps, per-case scores, failure detection and the AUV of Li et al.

Importing this package imports numpy only; torch and scipy are imported inside
the functions that need them.
"""

from napari_segeval.uncertainty.auv import (
    auv_table,
    class_matrix,
    normalize,
    sample_scale,
    semantic_scale,
)
from napari_segeval.uncertainty.dense import (
    augmented_labels,
    dense_tta,
    mc_dropout,
)
from napari_segeval.uncertainty.failure import (
    FAILURE_BELOW_SLICE,
    FAILURE_BELOW_STRUCTURE,
    RECALL_FRACTION,
    FailureDetection,
    RiskCoverageCurve,
    failure_auroc,
    failure_detection,
    recall_at,
    review_length,
    risk_coverage_curve,
)
from napari_segeval.uncertainty.features import class_scales, decoded_map, feature_kind
from napari_segeval.uncertainty.maps import (
    SampleStats,
    UncertaintyMaps,
    binary_entropy,
    entropy,
)
from napari_segeval.uncertainty.promptable import prompt_tta
from napari_segeval.uncertainty.scores import (
    REMOVAL_RULES,
    boundary_band,
    case_score,
    correlation,
    entropy_band_score,
    filter_most_uncertain,
    mean_uncertainty,
    n_removed,
    n_removed_quantile,
    scored_region,
    structure_scores,
)

__all__ = [
    "FAILURE_BELOW_SLICE",
    "FAILURE_BELOW_STRUCTURE",
    "RECALL_FRACTION",
    "REMOVAL_RULES",
    "FailureDetection",
    "RiskCoverageCurve",
    "SampleStats",
    "UncertaintyMaps",
    "augmented_labels",
    "auv_table",
    "binary_entropy",
    "boundary_band",
    "case_score",
    "class_matrix",
    "class_scales",
    "correlation",
    "decoded_map",
    "dense_tta",
    "entropy",
    "entropy_band_score",
    "failure_auroc",
    "failure_detection",
    "feature_kind",
    "filter_most_uncertain",
    "mc_dropout",
    "mean_uncertainty",
    "n_removed",
    "n_removed_quantile",
    "normalize",
    "prompt_tta",
    "recall_at",
    "review_length",
    "risk_coverage_curve",
    "sample_scale",
    "scored_region",
    "semantic_scale",
    "structure_scores",
]
