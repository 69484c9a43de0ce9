"""The *Dice* panel: per-structure metrics, clean vs attacked, kept live while editing."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from qtpy.QtCore import QTimer
from qtpy.QtWidgets import QCheckBox, QComboBox, QLabel

from napari_segeval._names import CLEAN
from napari_segeval._widgets._form import hbox, text_line, vbox
from napari_segeval._widgets._state import (
    CONDITIONS,
    Panel,
    ViewerState,
    current_index,
    go_to_index,
    listen,
    restartable_timer,
)
from napari_segeval._widgets.colours import several, structure_colour
from napari_segeval._widgets.evaluate.dice_table import DiceTable
from napari_segeval._widgets.evaluate.slice_plot import SlicePlot
from napari_segeval._widgets.jobs.worker import JobRunner, button, run_guarded
from napari_segeval._widgets.overlays.arrays import (
    compare_rows,
    slice_extent,
    slice_kinds,
    touched_slices,
    union,
)

SURFACE_DELAY_MS = 600
#: What the panel says without a reference, by whether a risk of failure is estimated.
NO_REFERENCE = {
    False: "choose a reference Labels layer",
    True: "no reference labels: no Dice; the plot shows the estimated risk of failure",
}
PLOT_TITLE = "Dice per slice of the selected structure, over its extent (click: go there)"
RISK_TITLE = (
    "Dice and estimated risk of failure per slice of the selected structure (click: go there)"
)
RISK_ONLY_TITLE = (
    "Estimated risk of failure per slice of the selected structure (no reference, no "
    "Dice; click: go there)"
)


def _ends(slices: list[int]) -> tuple[int, int] | None:
    """First and last of ``slices`` (None when empty)."""
    return (min(slices), max(slices)) if slices else None


class DicePanel(Panel):
    """Live metrics table, per-slice Dice plot, worst-slice jump and FP/FN overlay."""

    def __init__(self, napari_viewer: Any, state: ViewerState) -> None:
        super().__init__(napari_viewer, state)
        from napari_segeval._widgets.overlays.layers import ErrorOverlay

        self.live: dict[str, Any] = {}
        self.surface: dict[str, list[dict] | None] = {}
        self.records: list[dict] = []
        #: the condition counted for each column of the table (clean: attacked without it)
        self.counted: dict[str, str] = {}
        self._seen: set[int] = set()
        self._unhook: Callable[[], None] = lambda: None
        self._pending: dict[str, slice | None] = {}
        #: a problem, or what to do first; and the last job's result line (a propagation's,
        #: shown when the tab comes to front)
        self.message, self.result = text_line(), text_line()
        self.result.setVisible(False)
        self.table = DiceTable(state)
        self.headers, self.cell = self.table.headers, self.table.cell
        self.plot = SlicePlot()
        self.plot.slice_clicked.connect(self.go_to_slice)
        self.worst_button = button("Worst slice", "", self.go_to_worst, "worst slice")
        tip = "count everything again (after undo/redo)"
        self.recount_button = button("Recount", tip, self.rebind, "recount")
        self.overlay_box = QCheckBox("FP/FN overlay")
        self.overlay_condition = QComboBox()
        self.overlay_condition.addItems(list(CONDITIONS))
        self.overlay = ErrorOverlay(napari_viewer, self.state)
        self.overlay_box.toggled.connect(self._overlay_toggled)
        self.overlay_condition.currentTextChanged.connect(self._overlay_toggled)
        self._scored = (self.recount_button, self.overlay_box, self.overlay_condition)
        # restarted after every change: a dropped run needs no notification
        self.surface_runner = JobRunner(viewer=napari_viewer, notify=False)
        self.plot_title = QLabel(PLOT_TITLE)
        # the runner's status: "surface metrics: done" ...
        row = hbox(self.worst_button, *self._scored)
        shown = (self.result, self.message, self.table, self.plot_title, self.plot, row)
        layout = vbox(self, *shown, self.surface_runner)
        layout.setStretchFactor(self.table, 2)
        layout.setStretchFactor(self.plot, 1)
        self._flush_timer = restartable_timer(self, 0, self.flush)
        #: the delay after an edit before the surface metrics are computed again
        self.surface_timer: QTimer = restartable_timer(self, SURFACE_DELAY_MS, self._start_surface)
        ev = self.state.events
        self._unlisten = listen(
            [
                (ev.reference, self._new_case),
                *((signal, self.rebind) for signal in (ev.image, ev.clean, ev.attacked)),
                (ev.uncertainty, self.refresh),
                (ev.risk, self._new_risk),
                (ev.current, self._new_current),
            ]
        )
        self.viewer.dims.events.current_step.connect(self._on_step)
        self.rebind()

    def rebind(self) -> None:
        """Build the live counters for the current layers and count everything."""
        from napari_segeval._widgets.jobs.worker import error_message
        from napari_segeval.metrics import LiveMetrics

        self._unhook()
        self.live, self.surface, self._pending, self._seen = {}, {}, {}, set()
        ref = self.state.reference
        problems, hooked = [], []
        if ref is not None:
            hooked.append(("reference", ref))
            for cond in CONDITIONS:
                pred = self.state.predictions.get(cond)
                if pred is None:
                    continue
                spacing, names = self.state.spacing(), self.state.structures or None
                counted = self.state.counted.pop(cond, None)  # a worker's, once
                try:
                    if counted is not None and counted.adopt(ref.data, pred.data, spacing, names):
                        self.live[cond] = counted  # counted in the results browser's worker
                    else:
                        self.live[cond] = LiveMetrics(ref.data, pred.data, spacing, names)
                except Exception as exc:  # noqa: BLE001 - shown in the panel
                    problems.append(f"{cond}: {error_message(exc)}")
                    continue
                self.surface[cond] = None
                hooked.append((cond, pred))
        self._unhook = listen(
            pair
            for key, layer in hooked
            for pair in (
                (layer.events.paint, partial(self.on_paint, key)),
                (layer.events.data, partial(self.on_data_replaced, key)),
            )
        )
        if ref is None:
            problems = [NO_REFERENCE[bool(self.state.risk)]]
        elif not self.live and not problems:
            problems = ["no prediction yet: run propagation or choose a prediction layer"]
        self.message.setText("; ".join(problems))
        self.plot.setVisible(self.state.kind() != "image")
        scored = ref is not None or not self.state.risk  # else: the risk alone, no Dice
        for w in (self.table, *self._scored):
            w.setVisible(scored)
        self.worst_button.setVisible(scored and self.state.kind() != "image")
        self.overlay.refresh()
        self.refresh()
        self.surface_timer.start()

    def show_result(self, text: str) -> None:
        """Show a job's result line above the table (nothing for an empty ``text``)."""
        self.result.setText(text)
        self.result.setVisible(bool(text))

    def _new_case(self) -> None:
        self.show_result("")  # another case: the line was the last one's
        self.rebind()

    def _new_risk(self) -> None:
        if self.state.reference is None:
            self.rebind()  # its message says what the plot shows
        else:
            self.refresh_plot()

    def _new_current(self) -> None:
        self.table.select_current()
        self.refresh_plot()
        self.overlay.refresh()

    def on_paint(self, key: str, event: Any) -> None:
        """A paint event on the reference or a prediction: recount the touched slices."""
        ref = self.state.reference
        n = ref.data.shape[0] if ref is not None else 0
        region = touched_slices(getattr(event, "value", None) or [], n)
        targets = list(self.live) if key == "reference" else [key]
        for cond in (c for c in targets if c in self.live):
            pending = self._pending
            pending[cond] = union(pending[cond], region) if cond in pending else region
        # napari emits `paint` before writing some edits (data_setitem): count after it returns
        self._flush_timer.start()

    def on_data_replaced(self, key: str) -> None:
        """A layer's whole array was replaced: rebuild the counters."""
        if key == CLEAN:
            self.state.uncertainty = {}  # the scores belonged to the old prediction
        run_guarded("metrics", self.rebind)

    def flush(self) -> None:
        """Apply the pending edits to the counters and refresh the table and plot."""
        pending, self._pending = self._pending, {}
        for cond in (c for c in pending if c in self.live):
            self.live[cond].update(pending[cond])
            self.surface[cond] = None
        if pending:
            self.refresh()
            self.surface_timer.start()

    def refresh(self) -> None:
        """Redraw the table and the plot from the counters."""
        counted = [c for c in CONDITIONS if c in self.live]  # the attacked alone: its column
        self.counted = dict(zip(CONDITIONS, counted, strict=False))
        tables = {col: self.live[c].table() for col, c in self.counted.items()}
        surface = {col: self.surface.get(c) for col, c in self.counted.items()}
        rows = (
            compare_rows(tables[CLEAN], tables.get("attacked"), surface=surface) if tables else []
        )
        self.records = self._in_play(rows)
        parts = (*CONDITIONS, "delta")
        computing = {p for p in parts if self.surface.get(self.counted.get(p, "")) is None}
        self.table.fill(self.records, computing)
        self.refresh_plot()

    def _in_play(self, records: list[dict]) -> list[dict]:
        """Rows of structures some prediction has segmented since binding (all with none)."""
        for rec in records:
            if any((rec[c] or {}).get("volume_pred_ml", 0) > 0 for c in CONDITIONS):
                self._seen.add(rec["label"])
        shown = [rec for rec in records if rec["label"] in self._seen]
        return shown or records

    def refresh_plot(self) -> None:
        """Redraw the per-slice plot of the current structure: Dice, risk, extent, marks."""
        if self.state.kind() == "image":
            return
        label, names = self.state.current, self.state.structures
        live = self.live.get(CLEAN, self.live.get("attacked"))
        series, colours = {}, {}
        if label is not None:
            series = {cond: counter.per_slice_dice(label) for cond, counter in self.live.items()}
            if several(names):  # the structure's colours in the layers
                colours = {cond: structure_colour(label, names, cond) for cond in self.live}
        self.plot.set_series(series, colours)
        risk = self.state.risk.get(label) if label is not None else None
        layer = self._layer_for_axis0()
        curve, stops, at_risk = None, (), []
        if risk is not None and risk.slices and layer is not None and layer.ndim >= 3:
            curve = np.full(layer.data.shape[0], np.nan)
            for s in (s for s in risk.slices if 0 <= s.slice < len(curve)):
                curve[s.slice] = s.risk
            stops = tuple(k for k, _ in risk.stops)
            at_risk = [s.slice for s in risk.slices if s.area > 0]
        self.plot.set_risk(curve, stops)
        title = PLOT_TITLE if curve is None else RISK_TITLE if live else RISK_ONLY_TITLE
        self.plot_title.setText(title)
        prompts = self.state.prompts.get(label) if label is not None else None
        frames = tuple(prompts.frames) if prompts is not None else ()
        if label is not None and live is not None:
            counts = live.slice_counts(label)
            predictions = [c.slice_counts(label)[:, 2] > 0 for c in self.live.values()]
            present = np.any([counts[:, 1] > 0, *predictions], axis=0)
            self.plot.set_range(slice_extent(present))
            predicted = np.flatnonzero(counts[:, 2] > 0).tolist()
            self.plot.set_marks(*slice_kinds(counts), frames, _ends(predicted))
        elif curve is not None:  # no Dice: the slices the risk describes
            self.plot.set_range(slice_extent(np.isfinite(curve), margin=0.0, min_margin=1))
            self.plot.set_marks(None, None, frames, _ends(at_risk))
        self._on_step()

    def _layer_for_axis0(self) -> Any:
        ref = self.state.reference
        return ref if ref is not None else self.state.image

    def current_slice(self) -> int | None:
        """Slice index (axis 0) shown in the viewer."""
        return current_index(self.viewer, self._layer_for_axis0())

    def _on_step(self, event: Any = None) -> None:
        self.plot.set_current(self.current_slice())

    def go_to_slice(self, index: int) -> None:
        """Show slice ``index`` of the case in the viewer."""
        go_to_index(self.viewer, self._layer_for_axis0(), index)

    def go_to_worst(self) -> int | None:
        """Jump to the structure's worst slice (clean first) (``worst_slice_from_counts``)."""
        from napari_segeval.metrics import worst_slice_from_counts

        label = self.state.current
        live = self.live.get(CLEAN, self.live.get("attacked"))
        index = None
        if label is not None and live is not None:
            index = worst_slice_from_counts(live.slice_counts(int(label)))
        if index is None:
            self.message.setText("no slice holds the selected structure")
            return None
        self.go_to_slice(index)
        return index

    def _start_surface(self) -> None:
        from napari_segeval._widgets.jobs.tasks import surface_rows

        if not self.live or self.state.reference is None:
            return
        if self.surface_runner.running:
            self.surface_runner.cancel()
            self.surface_timer.start()
            return
        ref = self.state.reference
        preds = {c: self.state.predictions[c] for c in self.live}
        pairs = {c: (ref.data, pred.data) for c, pred in preds.items()}
        rows = next(iter(self.live.values())).table()
        self.surface_runner.start(
            "surface metrics",
            surface_rows,
            pairs,
            self.state.spacing(),
            self.state.structures or {r["label"]: r["name"] for r in rows},
            needs=[ref, *preds.values()],
            on_done=self._surface_done,
        )

    def _surface_done(self, rows: dict[str, list[dict]]) -> None:
        if self._pending or self.surface_timer.isActive():
            return  # an edit arrived meanwhile: the next run brings fresh values
        for cond, value in rows.items():
            if cond in self.live:
                self.surface[cond] = value
        self.refresh()

    def _overlay_toggled(self, *_: Any) -> None:
        self.overlay.condition = self.overlay_condition.currentText()
        if self.overlay_box.isChecked():
            run_guarded("overlay", self.overlay.show)
        else:
            self.overlay.hide()

    def closeEvent(self, event: Any) -> None:
        self._unhook()
        self._unlisten()
        super().closeEvent(event)
