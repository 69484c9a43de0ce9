"""The screenshots of reviewing without a reference: ``docs/review_worklist.png`` and
``docs/review_case.png``.

    xvfb-run -a -s "-screen 0 1600x1000x24" python scripts/screenshot-review.py \\
        RESULTS docs/review_worklist.png docs/review_case.png [ROW]

``RESULTS`` is a results folder of a run without reference labels (docs/reviewing.md:
the sample task's images with their prompts files, ``segeval evaluate --prompts``).
Opens napari at 1600 x 1000 with the *Results* panel on the left and the *Evaluate*
panel on the right (napari's layer list hidden to leave the image its room), opens the
folder as its worklist (riskiest first) and its riskiest row, on its riskiest flagged
slice; marks that case reviewed in a copy of the folder (the folder itself is left as it
is) and saves the worklist; then opens row ``ROW`` of the worklist (default 2), which
opens on its riskiest flagged slice, and saves the case. Nothing is downloaded.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path


def _settle(until=lambda: True, seconds: float = 60.0) -> None:
    from qtpy.QtWidgets import QApplication

    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        QApplication.processEvents()
        time.sleep(0.02)
    for _ in range(30):
        QApplication.processEvents()
        time.sleep(0.01)


def main(results: str, worklist_png: str, case_png: str, row: str = "2") -> None:
    import napari
    from qtpy.QtCore import Qt

    from napari_segeval._widgets.main import SegEvalWidget
    from napari_segeval._widgets.results.panel import ResultsPanel

    work = Path(tempfile.mkdtemp()) / "review"
    shutil.copytree(results, work)  # review.json goes into the copy
    viewer = napari.Viewer(show=True, title="napari-segeval: reviewing without a reference")
    qt = viewer.window._qt_window
    for dock in (
        viewer.window._qt_viewer.dockLayerList,
        viewer.window._qt_viewer.dockLayerControls,
    ):
        dock.setVisible(False)
    panel = ResultsPanel(viewer)
    evaluate = SegEvalWidget(viewer)
    panel.evaluate = evaluate
    left = viewer.window.add_dock_widget(panel, name="Results", area="left")
    right = viewer.window.add_dock_widget(evaluate, name="Evaluate", area="right")
    qt.resize(1600, 1000)
    qt.resizeDocks([left, right], [540, 560], Qt.Orientation.Horizontal)
    panel.open_folder(work)
    _settle(lambda: panel.folder is not None and not panel.runner.running)
    panel.select_row(0)
    _settle(lambda: panel.loaded is not None and not panel.runner.running)
    panel.review.mark(panel.loaded.case_id)
    _settle()
    viewer.screenshot(path=worklist_png, canvas_only=False, flash=False)
    panel.select_row(int(row))
    _settle(lambda: panel.row is not None and panel.loaded.case_id == panel.row["case"])
    _settle(lambda: not panel.runner.running)
    viewer.screenshot(path=case_png, canvas_only=False, flash=False)
    viewer.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
