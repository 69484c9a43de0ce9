"""Compare mode: clean and attacked side by side (:mod:`~napari_segeval._widgets.compare.view`).

Importing this package imports nothing.
"""
