"""Training of the built-in models (above :mod:`napari_segeval.models` in the layer order).

The runtime never imports this package; the ``cv5-2d`` and ``uncertainty`` protocols do, to train
their models. ``python -m napari_segeval.training.builtin_prompt`` and
``python -m napari_segeval.training.builtin_ct`` write the shipped weights (docs/model_cards.md).
"""
