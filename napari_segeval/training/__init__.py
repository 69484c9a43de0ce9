"""Training of the built-in models (above :mod:`napari_segeval.models` in the layer order).

The runtime never imports this package; the ``cv5-2d`` evaluation protocol does,
because it trains its 2D U-Net per fold.

* :mod:`.builtin_prompt` - the built-in promptable model, a class-agnostic box-and-click
  segmenter: ``python -m napari_segeval.training.builtin_prompt``. Its pieces:
  :mod:`.shapes` (generated objects and scenes), :mod:`.appearance` (randomised
  appearance), :mod:`.prompt_sources` (training stacks and their frames),
  :mod:`.prompt_examples` (episodes: a start, then simulated corrections),
  :mod:`.clicks` (where a corrective click goes) and :mod:`.heldout` (the held-out
  volumes of its benchmark).
* :mod:`.builtin_ct` - the built-in dense CT model (``builtin-ct``) on CT phantoms:
  ``python -m napari_segeval.training.builtin_ct``.
* :mod:`.unet2d` - :func:`~napari_segeval.training.unet2d.train_unet2d`, the 2D U-Net
  of the ``cv5-2d`` protocol.

The scripts write the weight files the runtime ships
(``napari_segeval/models/weights``, ``napari_segeval/models/dense/weights``).
"""
