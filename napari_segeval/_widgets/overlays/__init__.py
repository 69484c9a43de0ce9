"""What the panels draw over the image: the Qt-free numerics
(:mod:`~napari_segeval._widgets.overlays.arrays`) and the overlay layers
(:mod:`~napari_segeval._widgets.overlays.layers`).

Importing this package imports nothing (no Qt, no napari).
"""
