"""The README's screenshot of the Prompt tab's model picker: ``docs/model_picker.png``.

    xvfb-run -a python scripts/screenshot-model-picker.py docs/model_picker.png [MODEL]

Opens napari with the CT sample and the Evaluate panel on its Prompt tab, chooses
``MODEL`` in the picker (default ``MedSAM2 checkpoint``: MedSAM2_latest's card and its
*Download*), saves the window and closes. Nothing is downloaded.
"""

from __future__ import annotations

import sys


def main(path: str, model: str = "MedSAM2 checkpoint") -> None:
    import napari
    from qtpy.QtWidgets import QApplication

    from napari_segeval._sample_data import sample_ct
    from napari_segeval._widgets.main import SegEvalWidget

    viewer = napari.Viewer(show=True)
    viewer.window._qt_window.resize(1500, 1000)
    for data, kwargs, kind in sample_ct():
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    widget = SegEvalWidget(viewer)
    viewer.window.add_dock_widget(widget, name="Evaluate", area="right")
    widget.tabs.setCurrentWidget(widget.prompt)
    widget.prompt.device.value = "cpu"
    if not widget.prompt.picker.choose(model):
        raise SystemExit(f"{model!r} is not in the picker's list")
    for _ in range(20):
        QApplication.processEvents()
    viewer.screenshot(path=path, canvas_only=False, flash=False)
    viewer.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
