"""Per-voxel uncertainty maps and per-structure / per-case scores.

* :mod:`.maps`: entropy (optionally normalised by ``log K``), running sample
  statistics, the :class:`UncertaintyMaps` record.
* :mod:`.dense`: test-time augmentation (:func:`dense_tta`) and MC-dropout
  (:func:`mc_dropout`) for dense models.
* :mod:`.promptable`: box jitter + intensity noise for promptable models
  (:func:`prompt_tta`).
* :mod:`.scores`: boundary band, AUV (area under the uncertainty-volume curve,
  equal to the mean uncertainty over the scored region), per-structure and
  per-case scores, filtering the most uncertain cases, correlation.

Importing this package imports numpy only; torch and scipy are imported inside
the functions that need them.
"""

from napari_segeval.uncertainty.dense import dense_tta, dropout_modules, mc_dropout
from napari_segeval.uncertainty.maps import (
    SampleStats,
    UncertaintyMaps,
    binary_entropy,
    entropy,
    maps_from_probabilities,
)
from napari_segeval.uncertainty.promptable import prompt_tta
from napari_segeval.uncertainty.scores import (
    auv,
    auv_from_probabilities,
    boundary_band,
    case_score,
    correlation,
    filter_most_uncertain,
    n_removed,
    scored_region,
    structure_scores,
    uncertainty_volume_curve,
)

__all__ = ["SampleStats", "UncertaintyMaps", "auv", "auv_from_probabilities", "binary_entropy",
           "boundary_band", "case_score", "correlation", "dense_tta", "dropout_modules",
           "entropy", "filter_most_uncertain", "maps_from_probabilities", "mc_dropout",
           "n_removed", "prompt_tta", "scored_region", "structure_scores",
           "uncertainty_volume_curve"]
