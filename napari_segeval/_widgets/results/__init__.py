"""The *Results* panel: browse a ``segeval evaluate`` folder, worst or riskiest cases first.

The panel (:mod:`~napari_segeval._widgets.results.panel`), its table, the layers it
owns, its worker functions, the rounds of an interactive run and the start of a
correction. Importing this package imports nothing.
"""
