"""The *Evaluate* widget's tabs besides *Prompt & propagate*: *Segment* (dense models),
*Attack*, *Dice* (with its per-slice plot) and *Export*.

The widget itself is :class:`~napari_segeval._widgets.main.SegEvalWidget`; the prompt tab
is :mod:`~napari_segeval._widgets.prompt`. Importing this package imports nothing.
"""
