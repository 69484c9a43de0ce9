"""Dense (prompt-free) segmentation models run by Gaussian sliding window.

* :func:`load_dense_model` - ``"builtin-ct"`` (a small 3D U-Net trained on CT
  phantoms, weights shipped), built-in-architecture state dicts, TorchScript
  archives (explicit trust flag) and nnU-Net v2 result folders (extra ``nnunet``).
* :func:`segment_case` - preprocess, sliding window, back to the case's grid,
  post-process; ``grad=True`` keeps the graph for attacks.

Importing this package does not import torch.
"""

from __future__ import annotations

from napari_segeval.models.dense._loaders import BUILTIN, load_dense_model
from napari_segeval.models.dense._model import (
    DenseModel,
    DenseResult,
    PreprocessInfo,
    segment_case,
)

__all__ = [
    "BUILTIN",
    "DenseModel",
    "DenseResult",
    "PreprocessInfo",
    "load_dense_model",
    "segment_case",
]
