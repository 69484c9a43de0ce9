"""Jobs of the panels: the runner that runs one job as a napari worker and shows its
progress, what ends a job from outside, and the functions the *Evaluate* tabs and the
model picker run.

:mod:`~napari_segeval._widgets.jobs.tasks` is Qt-free; importing this package imports
nothing.
"""
