"""The model picker of the *Prompt* and *Attack* tabs (:mod:`~napari_segeval._widgets.models.picker`)
and its Qt-free rows, states and cards (:mod:`~napari_segeval._widgets.models.rows`).

Importing this package imports nothing.
"""
