"""Model protocols and backends.

* :mod:`napari_segeval.models.base` - the promptable-backend interface
  (:class:`~napari_segeval.models.base.PromptableModel`, ``NormalizeInfo``).
* :mod:`napari_segeval.models.builtin_prompt` - the built-in box-prompted
  network trained on phantoms (weights shipped in ``models/weights``).
* :mod:`napari_segeval.models.medsam2` - MedSAM2 (optional extra).
* :mod:`napari_segeval.models._device` - device selection.

Nothing here imports torch at package import time.
"""
