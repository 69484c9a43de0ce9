"""Metrics engine: what each metric is (:mod:`~napari_segeval.metrics.catalog`), overlap
from one confusion matrix, surfel-based surface metrics, per-slice and live metrics, and
aggregation. numpy/scipy only."""

from napari_segeval.metrics.aggregate import (
    ResultsTable,
    fraction,
    is_robust,
    kfold_summary,
    percent,
    robust_fraction,
    robust_threshold,
    summarize,
)
from napari_segeval.metrics.catalog import METRICS, STRUCTURE_METRICS, Metric, as_float, mean_std
from napari_segeval.metrics.live import LiveMetrics
from napari_segeval.metrics.overlap import (
    confusion_matrix,
    overlap_from_confusion,
    overlap_from_counts,
    overlap_metrics,
)
from napari_segeval.metrics.slices import (
    largest_failing_slice,
    per_slice_counts,
    per_slice_dice,
    worst_slice,
    worst_slice_from_counts,
)
from napari_segeval.metrics.surface import surface_distances, surface_metrics
from napari_segeval.metrics.table import ROW_KEYS, structure_table, structures_to_score

__all__ = [
    "METRICS",
    "ROW_KEYS",
    "STRUCTURE_METRICS",
    "LiveMetrics",
    "Metric",
    "ResultsTable",
    "as_float",
    "confusion_matrix",
    "fraction",
    "is_robust",
    "kfold_summary",
    "largest_failing_slice",
    "mean_std",
    "overlap_from_confusion",
    "overlap_from_counts",
    "overlap_metrics",
    "per_slice_counts",
    "per_slice_dice",
    "percent",
    "robust_fraction",
    "robust_threshold",
    "structure_table",
    "structures_to_score",
    "summarize",
    "surface_distances",
    "surface_metrics",
    "worst_slice",
    "worst_slice_from_counts",
]
