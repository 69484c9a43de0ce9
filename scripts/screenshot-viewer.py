"""The viewer as a clinician sees it after one propagation, on a CT and on an MR.

    xvfb-run -a -s "-screen 0 1600x1000x24" python scripts/screenshot-viewer.py \\
        CT|MR OUT.png [MODEL]

``CT`` is the bundled CT sample (the liver), ``MR`` the MNI152 T1 template shipped in
nilearn's wheel with the structures of ``tests/_mni.py`` (the right lateral ventricle).
Opens napari at 1600 x 1000 with the *Case* and *Evaluate* panels, chooses ``MODEL``
(default ``litemedsam``; ``builtin`` without the extra), draws the reference's box on the
structure's middle slice, runs the propagation and saves the window with the Dice tab in
front, on the prompted slice. Nothing is downloaded. It serves the before/after shots of
a change to the viewer: run it from an older checkout for the before.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _settle(until=lambda: True, seconds: float = 900.0) -> None:
    from qtpy.QtWidgets import QApplication

    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        QApplication.processEvents()
        time.sleep(0.02)
    for _ in range(50):
        QApplication.processEvents()
        time.sleep(0.01)


def _layers(which: str) -> tuple[list, str]:
    """``(napari layer tuples, structure to prompt)`` of the CT sample or the MNI T1."""
    if which == "CT":
        from napari_segeval._sample_data import sample_ct

        return sample_ct(), "liver"
    sys.path.insert(0, str(ROOT / "tests"))
    from _mni import STRUCTURES, mni_case

    from napari_segeval._layer_data import case_to_layers

    return case_to_layers(mni_case(), "mni152_t1"), STRUCTURES[3]


def main(which: str, out: str, model: str = "litemedsam") -> None:
    import napari

    from napari_segeval._widgets.case import CaseWidget
    from napari_segeval._widgets.main import SegEvalWidget

    viewer = napari.Viewer(title=f"napari-segeval: {which}")
    viewer.window.resize(1600, 1000)
    layers, structure = _layers(which)
    for data, kwargs, kind in layers:
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    case = CaseWidget(viewer)
    w = SegEvalWidget(viewer)
    viewer.window.add_dock_widget(case, name="Case", area="right")
    viewer.window.add_dock_widget(w, name="Evaluate", area="right")
    if not w.prompt.picker.choose(model):
        raise SystemExit(f"{model}: not a promptable model of the viewer's list")
    w.prompt.device.value = "cpu"
    label = next(k for k, v in w.state.structures.items() if v == structure)
    w.state.set_current(label)
    w.prompt.tools.go_to_middle()
    box = w.prompt.tools.box_from_reference()
    w.prompt.run()
    _settle(lambda: not w.prompt.runner.running)
    _settle(lambda: not w.dice.surface_runner.running, 120)
    w.dice.go_to_slice(box.index)
    _settle()
    viewer.screenshot(path=out, canvas_only=False, flash=False)
    viewer.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
