"""napari dock widgets: thin adapters that run the headless core in worker threads.

The numerics they add are for display only (overlay arrays, the slice to look
at, table rows) and live in Qt-free modules such as :mod:`napari_segeval._widgets.overlays`.
Importing this package imports nothing (no Qt, no napari).
"""
