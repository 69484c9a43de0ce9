"""``segeval demo``: the CT sample, a liver box, propagation, an attack, the Dice panel.

It chains the jobs of the panels a person uses; ``correct=True`` (no attack) corrects the
liver's worst slice with the ``interactive`` protocol's prompt rule, then re-propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._names import CLEAN
from napari_segeval._widgets.case import CaseWidget
from napari_segeval._widgets.evaluate.attack import EPS_RANGE, STEPS_RANGE
from napari_segeval._widgets.jobs.worker import Outcome
from napari_segeval._widgets.main import SegEvalWidget


def check_attack_settings(eps: float, steps: int) -> None:
    """Refuse an epsilon or a step count the Attack panel would clamp (one line)."""
    from napari_segeval._errors import SegEvalError

    for flag, value, (lo, hi), unit in (
        ("eps", eps, EPS_RANGE, " (normalized units)"),
        ("steps", steps, STEPS_RANGE, ""),
    ):
        if not lo <= value <= hi:
            raise SegEvalError(f"--{flag} must be in [{lo:g}, {hi:g}]{unit}, got {value:g}")


class DemoRun:
    """Drive the widget through the demo; ``error`` holds the first failure's message."""

    def __init__(
        self,
        viewer: Any,
        backend: str = "builtin",
        device: str = "auto",
        attack: str | None = "pgd",
        eps: float = 0.02,
        steps: int = 5,
        compare: bool = False,
        checkpoint: str | Path | None = None,
        correct: bool = False,
    ) -> None:
        from napari_segeval._errors import SegEvalError
        from napari_segeval._sample_data import sample_ct
        from napari_segeval.models.registry import PROMPTABLE, split_ref

        self.viewer = viewer
        self.error: str | None = None
        self.finished = False
        for data, kwargs, kind in sample_ct():
            getattr(viewer, f"add_{kind}")(data, **kwargs)
        self.case = CaseWidget(viewer)
        self.widget = SegEvalWidget(viewer)  # the same shared state as the Case panel
        if not correct:  # a correction needs the whole height for the Prompt tab
            viewer.window.add_dock_widget(self.case, name="Case", area="right")
        viewer.window.add_dock_widget(self.widget, name="Evaluate", area="right")
        w = self.widget
        name = split_ref(backend)[0]
        if checkpoint is not None and name in PROMPTABLE:
            w.prompt.picker.use_file(checkpoint, name)
        elif not w.prompt.picker.choose(name):
            raise SegEvalError(f"{backend}: not a promptable model of the viewer's list")
        w.prompt.device.value = device
        if correct:  # the prompts and how Dice moved need the tab's height, not the card
            w.prompt.picker.card_button.setChecked(False)
        self.attack_name = None if correct else attack
        self.compare = compare
        self.correct = correct
        self.correction: Any = None
        if self.attack_name:
            w.attack.attack.value = attack
            w.attack.eps.value = eps
            w.attack.steps.value = steps
        liver = next((k for k, v in w.state.structures.items() if v == "liver"), 1)
        w.state.set_current(liver)
        w.prompt.tools.go_to_middle()
        self.box = w.prompt.tools.box_from_reference()
        w.prompt.runner.job_done.connect(self._propagated)
        w.attack.runner.job_done.connect(self._attacked)

    def start(self) -> None:
        """Start propagation (the attack follows when it succeeds)."""
        from napari_segeval._widgets.jobs.worker import error_message

        try:
            self.widget.prompt.run()
        except Exception as exc:  # noqa: BLE001 - refused before any job: the demo's end
            self.error = f"propagation: {error_message(exc)}"
            self.finished = True

    def _fail(self, what: str, runner: Any) -> None:
        self.error = f"{what}: {runner.last_error or 'cancelled'}"
        self.finished = True

    def _propagated(self, name: str, outcome: str) -> None:
        if outcome != Outcome.OK:
            self._fail(name, self.widget.prompt.runner)
        elif self.correct and name == "propagation":
            self._add_correction()
        elif self.attack_name:
            self.widget.attack.run()
        else:
            self._done()

    def _add_correction(self) -> None:
        """Draw the correction in the Prompt tab's layers (as a person would), re-propagate."""
        from napari_segeval.metrics import largest_failing_slice
        from napari_segeval.prompts import Point, next_correction

        w, label = self.widget, self.box.label
        stack = (-1, *w.state.reference.data.shape[-2:])  # a 2D image as one slice
        ref = np.asarray(w.state.reference.data).reshape(stack) == label
        pred = np.asarray(w.state.predictions[CLEAN].data).reshape(stack) == label
        points = w.prompt.update_capability().points is True
        found = next_correction(
            ref,
            pred,
            label=label,
            kind="point" if points else "box",
            points=points,
            index=largest_failing_slice(ref, pred, 1),
        )
        if found is None:
            self._done()
            return
        prompt = found.prompt
        tools = w.prompt.tools
        if isinstance(prompt, Point):
            tools.start_points(prompt.positive).add(prompt.to_napari(3))
        else:
            tools.start_box().add_rectangles([prompt.to_napari(3)])
        self.correction = prompt
        w.tabs.setCurrentWidget(w.prompt)
        w.prompt.repropagate()

    def _attacked(self, name: str, outcome: str) -> None:
        if outcome != Outcome.OK:
            self._fail("attack", self.widget.attack.runner)
        else:
            self._done()

    def _done(self) -> None:
        w = self.widget
        w.state.set_current(self.box.label)
        if self.correction is not None:  # the corrected slice, its prompts and the new Dice
            w.tabs.setCurrentWidget(w.prompt)
            w.dice.go_to_slice(self.correction.index)
            self.viewer.layers.selection.active = w.state.image
            self._zoom_on(self.correction)
            self.finished = True
            return
        w.tabs.setCurrentWidget(w.dice)
        w.dice.go_to_slice(self.box.index)
        if self.compare:
            w.display.compare.setChecked(True)
            w.display.disagreement.setChecked(self.attack_name is not None)
        self.finished = True

    def _zoom_on(self, prompt: Any) -> None:
        """Frame the corrected structure and the prompt on its slice (reference + prompt)."""
        from napari_segeval.prompts import Point

        image = self.widget.state.image
        ref = np.asarray(self.widget.state.reference.data)[prompt.index] == prompt.label
        at = (prompt.y, prompt.x) if isinstance(prompt, Point) else (prompt.y0, prompt.x0)
        yx = np.vstack([np.argwhere(ref), [at]]).astype(float)
        lo, hi = yx.min(0) - 8, yx.max(0) + 8
        scale = np.asarray(image.scale[-2:], float)
        self.viewer.reset_view()
        cam = self.viewer.camera
        full = np.asarray(image.data.shape[-2:], float) * scale
        cam.zoom = cam.zoom * min(2.5, 0.6 * float(np.min(full / ((hi - lo) * scale))))
        centre = (lo + hi) / 2 * scale + np.asarray(image.translate[-2:], float)
        cam.center = (*tuple(cam.center)[:-2], *centre)

    @property
    def settled(self) -> bool:
        """Everything ran and the surface metrics are in."""
        return self.finished and _surface_in(self.widget.dice)


def _surface_in(dice: Any) -> bool:
    """The Dice panel's surface metrics are in (none running or due)."""
    return not dice.surface_runner.running and not dice.surface_timer.isActive()


def _wait(done: Callable[[], Any], ms: int = 100) -> None:
    """Run Qt's event loop until ``done()``, checked every ``ms`` milliseconds."""
    from qtpy.QtCore import QEventLoop, QTimer

    loop, timer = QEventLoop(), QTimer()
    timer.setInterval(ms)
    timer.timeout.connect(lambda: loop.quit() if done() else None)
    timer.start()
    loop.exec()
    timer.stop()


def _viewer(title: str) -> Any:
    import napari

    viewer = napari.Viewer(title=title)
    viewer.window.resize(1600, 1000)
    return viewer


def _finish(
    viewer: Any,
    widget: SegEvalWidget,
    screenshot: str | Path | None,
    done: Callable[[], Any],
    failure: Callable[[], str | None],
) -> Path | None:
    """Hand over to napari; with ``screenshot``, wait for ``done()``, save the window, close
    (or raise ``SegEvalError(failure())`` when that is a message)."""
    import napari

    from napari_segeval._errors import SegEvalError

    if screenshot is None:
        napari.run()
        return None
    _wait(done)
    try:
        problem = failure()
        if problem:
            raise SegEvalError(problem)
        view = widget.display.view
        if view is not None:  # let the dock take its size, then fit the case in every view
            _wait(lambda: True, 300)
            view.fit()
            _wait(lambda: True, 300)
        viewer.screenshot(path=str(screenshot), canvas_only=False, flash=False)
        return Path(screenshot)
    finally:
        viewer.close()


def run_demo(screenshot: str | Path | None = None, **kwargs: Any) -> Path | None:
    """Open napari with the demo; with ``screenshot``, save the window there and return
    (``SegEvalError`` when propagation or the attack fails)."""
    viewer = _viewer("napari-segeval demo")
    demo = DemoRun(viewer, **kwargs)
    demo.start()
    return _finish(
        viewer,
        demo.widget,
        screenshot,
        lambda: demo.settled or demo.error,
        lambda: demo.error and f"demo failed in {demo.error}",
    )


def show_results(viewer: Any, results: str | Path) -> Any:
    """Dock the *Results* and *Evaluate* panels, open ``results``, select its worst row; returns
    the Results panel (wait for ``panel.loaded`` before looking at the layers)."""
    from napari_segeval._widgets.results.panel import ResultsPanel

    panel = ResultsPanel(viewer)
    evaluate = SegEvalWidget(viewer)
    panel.evaluate = evaluate
    viewer.window.add_dock_widget(panel, name="Results", area="right")
    viewer.window.add_dock_widget(evaluate, name="Evaluate", area="right")

    def opened(name: str, outcome: str) -> None:
        if name.startswith("opening") and outcome == Outcome.OK and panel.visible_rows():
            panel.select_row(0)

    panel.runner.job_done.connect(opened)
    panel.open_folder(results)
    return panel


def run_results_demo(results: str | Path, screenshot: str | Path | None = None) -> Path | None:
    """Open napari on a results folder with its worst row shown; optionally save a screenshot
    (``SegEvalError`` when the folder or its worst case cannot be opened)."""
    import time

    viewer = _viewer("napari-segeval results browser")
    panel = show_results(viewer, results)
    deadline = time.monotonic() + 600

    def settled() -> bool:
        shown = panel.loaded is not None and _surface_in(panel.evaluate.dice)
        idle = not panel.runner.running and (bool(panel.runner.last_error) or shown)
        return idle or time.monotonic() > deadline

    def failure() -> str | None:
        error = panel.runner.last_error
        return f"{results}: {error or 'nothing to show'}" if error or panel.loaded is None else None

    return _finish(viewer, panel.evaluate, screenshot, settled, failure)
