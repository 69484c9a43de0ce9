"""napari dock widgets: thin adapters that run the headless core in worker threads.

The numerics they add are for display only (overlay arrays, the slice to look
at, table rows) and live in Qt-free modules such as :mod:`napari_segeval._widgets.overlays.arrays`.
Importing this package imports nothing (no Qt, no napari).

Sub-packages by concept, low to high (a sub-package imports only from those below
it, never from a sibling of its own level; ``tests/test_import_contract.py``
checks it):

* :mod:`~napari_segeval._widgets._state` (the per-viewer state) and
  :mod:`~napari_segeval._widgets.jobs` (a job in a worker thread, what ends it,
  the runner, and the functions the *Evaluate* tabs and the model picker run);
* :mod:`~napari_segeval._widgets._layers` (the layer picker),
  :mod:`~napari_segeval._widgets.overlays` (the Qt-free display numerics and the
  overlay layers) and :mod:`~napari_segeval._widgets.models` (the model picker);
* :mod:`~napari_segeval._widgets.prompt` (the *Prompt & propagate* tab);
* :mod:`~napari_segeval._widgets.compare` (compare mode) and
  :mod:`~napari_segeval._widgets.evaluate` (the *Segment*, *Attack*, *Dice* and
  *Export* tabs);
* the napari widgets :mod:`~napari_segeval._widgets.case` and
  :mod:`~napari_segeval._widgets.main` (*Evaluate*), then
  :mod:`~napari_segeval._widgets.results` (the results browser), then
  :mod:`~napari_segeval._widgets.demo` (``segeval demo``).
"""
