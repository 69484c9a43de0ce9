"""Model protocols and backends.

* :mod:`napari_segeval.models.registry` - the one way from a name or path people
  type to a model: :func:`~napari_segeval.models.registry.load_promptable`,
  :func:`~napari_segeval.models.registry.load_dense`, and the known names.
* :mod:`napari_segeval.models.base` - the promptable-backend interface
  (:class:`~napari_segeval.models.base.PromptableModel`, ``NormalizeInfo``).
* :mod:`napari_segeval.models.walk` - walks: one structure in one direction
  (:class:`~napari_segeval.models.walk.Walk`, ``WalkOutput``, ``walk_steps``).
* :mod:`napari_segeval.models.builtin_prompt` - the built-in box-prompted
  network trained on phantoms (weights shipped in ``models/weights``).
* :mod:`napari_segeval.models.threshold` - the weight-free baseline.
* :mod:`napari_segeval.models.medsam2` - MedSAM2 (optional extra).
* :mod:`napari_segeval.models.dense` - dense models (built-in 3D CT U-Net, the
  ``cv5-2d`` 2D U-Net, TorchScript, nnU-Net v2).
* :mod:`napari_segeval.models._checkpoint` - the one checkpoint reader (files are
  data, never code); :mod:`napari_segeval.models._blocks` - the shared U-Net block;
  :mod:`napari_segeval.models._device` - device selection.

Training lives above this package, in :mod:`napari_segeval.training`.
Nothing here imports torch at package import time.
"""
