"""Dense (prompt-free) segmentation models run by Gaussian sliding window.

* Load one with :func:`napari_segeval.models.registry.load_dense`: ``"builtin-ct"``
  (a small 3D U-Net trained on CT phantoms, weights shipped), built-in-architecture
  state dicts, TorchScript archives (explicit trust flag) and nnU-Net v2 result
  folders (extra ``nnunet``).
* :func:`segment_case` - preprocess, sliding window, back to the case's grid,
  post-process; ``grad=True`` keeps the graph for attacks.
* :mod:`.unet` (the networks), :mod:`.unet2d` (the ``cv5-2d`` 2D U-Net model),
  :mod:`._plans` (the built-in plans), :mod:`._loaders` / :mod:`._nnunet` (files).

Importing this package does not import torch.
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
