"""Jobs of the panels: one job in a worker thread, what ends it from outside, the runner
that shows its progress, and the functions the *Evaluate* tabs and the model picker run.

:mod:`~napari_segeval._widgets.jobs.thread` and :mod:`~napari_segeval._widgets.jobs.tasks`
are Qt-free; importing this package imports nothing.
"""
