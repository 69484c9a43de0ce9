"""Dense (prompt-free) segmentation models run by Gaussian sliding window.

Load one with :func:`napari_segeval.models.registry.load_dense`; :func:`segment_case`
runs it. Importing this package does not import torch.
"""

from __future__ import annotations

from napari_segeval.models.dense._model import (
    DenseBackend,
    DenseModel,
    DenseResult,
    PreprocessInfo,
    segment_case,
)
from napari_segeval.models.dense._plans import BUILTIN_CT_WEIGHTS, BUILTIN_PLANS

__all__ = [
    "BUILTIN_CT_WEIGHTS",
    "BUILTIN_PLANS",
    "DenseBackend",
    "DenseModel",
    "DenseResult",
    "PreprocessInfo",
    "segment_case",
]
