"""The screenshots of reviewing without a reference: ``docs/review_worklist.png`` and
``docs/review_case.png``.

    xvfb-run -a -s "-screen 0 1600x1000x24" python scripts/screenshot-review.py \\
        docs/review_worklist.png docs/review_case.png [RESULTS [ROW]]

``RESULTS`` is a results folder of a run without reference labels (docs/reviewing.md).
Without it the script makes one in a temporary folder: the sample task's six images
without their labels folder, each with a prompts file holding the boxes a person would
draw (the reference's middle-slice box of each structure, written as *Save prompts…*
writes them), run by ``medsam2-3d`` with the built-in model and ``--prompts`` (about a
minute on a CPU).
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


def make_run(root: Path) -> Path:
    """The sample task without its labels, run from prompts files (module doc)."""
    import json

    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.io import read_case
    from napari_segeval.prompts import boxes_from_labels
    from napari_segeval.prompts.prompt_file import PromptFile, write_prompts
    from napari_segeval.prompts.prompt_set import PromptSet

    task = Path(__file__).resolve().parents[1] / "sample_data/msd_task/Task90_AbdomenPhantom"
    data, prompts = root / "Task90_NoLabels", root / "prompts"
    (data / "imagesTr").mkdir(parents=True)
    prompts.mkdir()
    ds = json.loads((task / "dataset.json").read_text())
    for entry in ds["training"]:
        image = task / entry["image"]
        shutil.copy(image, data / "imagesTr")
        case = read_case(image, labels=task / entry["label"])
        sets = {b.label: PromptSet.from_box(b) for b in boxes_from_labels(case.labels)}
        pf = PromptFile(sets, case.labels.shape, case.structures)
        write_prompts(prompts / f"{image.name.split('.')[0]}.prompts.json", pf)
    (data / "dataset.json").write_text(json.dumps(ds))
    out = root / "review"
    run_evaluation(data, "medsam2-3d", out, params={"prompts": str(prompts)}, workers=1)
    return out


def main(worklist_png: str, case_png: str, results: str | None = None, row: str = "2") -> None:
    import napari
    from qtpy.QtCore import Qt

    from napari_segeval._widgets.main import SegEvalWidget
    from napari_segeval._widgets.results.panel import ResultsPanel

    tmp = Path(tempfile.mkdtemp())
    if results is None:
        work = make_run(tmp)
    else:
        work = tmp / "review"
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
