"""The *Dice* panel: per-structure metrics, clean vs attacked, kept live while editing."""

from __future__ import annotations

from typing import Any

import numpy as np
from qtpy.QtCore import Qt, QTimer
from qtpy.QtGui import QColor
from qtpy.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from napari_segeval._names import CLEAN
from napari_segeval._widgets._state import (
    CONDITIONS,
    ViewerState,
    current_index,
    go_to_index,
    listen,
    shared_state,
)
from napari_segeval._widgets.colours import several, structure_colour
from napari_segeval._widgets.evaluate.slice_plot import SlicePlot
from napari_segeval._widgets.jobs.worker import JobRunner, run_guarded
from napari_segeval._widgets.overlays.arrays import (
    PANEL_KEYS,
    compare_rows,
    dice_colour,
    slice_extent,
    slice_kinds,
    touched_slices,
    union,
)
from napari_segeval.metrics.catalog import METRICS, UNCERTAINTY

SURFACE_DELAY_MS = 600
SURFACE_KEYS = ("hd95", "nsd")
UNC_HEADER = UNCERTAINTY.header
PLOT_TITLE = "Dice per slice of the selected structure, over its extent (click: go there)"
RISK_TITLE = (
    "Dice and estimated risk of failure per slice of the selected structure (click: go there)"
)
RISK_ONLY_TITLE = (
    "Estimated risk of failure per slice of the selected structure (no reference, no "
    "Dice; click: go there)"
)


def _fmt(key: str, value: float, pending: bool = False, signed: bool = False) -> str:
    """``METRICS[key].text`` of ``value``; ``...`` for a surface metric still computing."""
    if pending and key in SURFACE_KEYS and np.isnan(value):
        return "..."
    return METRICS[key].text(value, signed)


class DicePanel(QWidget):
    """Live metrics table, per-slice Dice plot, worst-slice jump and FP/FN overlay."""

    def __init__(self, napari_viewer: Any, state: ViewerState | None = None) -> None:
        super().__init__()
        from napari_segeval._widgets.overlays.layers import ErrorOverlay

        self.viewer = napari_viewer
        self.state = state if state is not None else shared_state(napari_viewer)
        self.live: dict[str, Any] = {}
        self.surface: dict[str, list | None] = {}
        self.records: list[dict] = []
        self._hooks: list[tuple[Any, Any, Any]] = []
        self._pending: dict[str, slice | None] = {}
        self.message = QLabel("")
        self.message.setWordWrap(True)
        #: the last job's result line (a propagation's, shown when the tab comes to front)
        self.result = QLabel("")
        self.result.setWordWrap(True)
        self.result.setVisible(False)
        self.table = QTableWidget(0, 1)
        self.table.setSelectionBehavior(QTableWidget.SelectRows)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setMinimumHeight(90)
        self.table.itemSelectionChanged.connect(self._row_selected)
        self.plot = SlicePlot()
        self.plot.slice_clicked.connect(self.go_to_slice)
        self.worst_button = QPushButton("Worst slice")
        self.worst_button.clicked.connect(lambda: run_guarded("worst slice", self.go_to_worst))
        self.recount_button = QPushButton("Recount")
        self.recount_button.setToolTip("count everything again (after undo/redo)")
        self.recount_button.clicked.connect(lambda: run_guarded("recount", self.rebind))
        self.overlay_box = QCheckBox("FP/FN overlay")
        self.overlay_condition = QComboBox()
        self.overlay_condition.addItems(list(CONDITIONS))
        self.overlay = ErrorOverlay(napari_viewer, self.state)
        self.overlay_box.toggled.connect(self._overlay_toggled)
        self.overlay_condition.currentTextChanged.connect(self._overlay_toggled)
        # restarted after every change: a dropped run needs no notification
        self.surface_runner = JobRunner(viewer=napari_viewer, notify=False)
        row = QHBoxLayout()
        for w in (self.worst_button, self.recount_button, self.overlay_box, self.overlay_condition):
            row.addWidget(w)
        layout = QVBoxLayout(self)
        layout.addWidget(self.result)
        layout.addWidget(self.message)
        layout.addWidget(self.table, 2)
        self.plot_title = QLabel(PLOT_TITLE)
        layout.addWidget(self.plot_title)
        layout.addWidget(self.plot, 1)
        layout.addLayout(row)
        layout.addWidget(self.surface_runner)  # its status: "surface metrics: done" ...
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(0)
        self._flush_timer.timeout.connect(self.flush)
        self._surface_timer = QTimer(self)
        self._surface_timer.setSingleShot(True)
        self._surface_timer.setInterval(SURFACE_DELAY_MS)
        self._surface_timer.timeout.connect(self._start_surface)
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

    # -- binding to layers ------------------------------------------------------------
    def _unhook(self) -> None:
        for emitter, name, cb in self._hooks:
            try:
                getattr(emitter, name).disconnect(cb)
            except (TypeError, RuntimeError, ValueError):
                pass
        self._hooks = []

    def _hook(self, layer: Any, key: str) -> None:
        def on_paint(event, key=key):
            self.on_paint(key, event)

        def on_data(event=None, key=key):
            self.on_data_replaced(key)

        layer.events.paint.connect(on_paint)
        layer.events.data.connect(on_data)
        self._hooks += [(layer.events, "paint", on_paint), (layer.events, "data", on_data)]

    def rebind(self) -> None:
        """Build the live counters for the current layers and count everything."""
        from napari_segeval._widgets.jobs.worker import error_message
        from napari_segeval.metrics import LiveMetrics

        self._unhook()
        self.live, self.surface, self._pending = {}, {}, {}
        self._seen: set[int] = set()
        ref = self.state.reference
        problems = []
        if ref is not None:
            self._hook(ref, "reference")
            for cond in CONDITIONS:
                pred = self.state.predictions.get(cond)
                if pred is None:
                    continue
                spacing, names = self.state.spacing(), self.state.structures or None
                counted = self.state.take_counted(cond)
                try:
                    if counted is not None and counted.adopt(ref.data, pred.data, spacing, names):
                        self.live[cond] = counted  # counted in the results browser's worker
                    else:
                        self.live[cond] = LiveMetrics(ref.data, pred.data, spacing, names)
                except Exception as exc:  # noqa: BLE001 - shown in the panel
                    problems.append(f"{cond}: {error_message(exc)}")
                    continue
                self.surface[cond] = None
                self._hook(pred, cond)
        if ref is None and self.state.risk:
            self.message.setText(
                "no reference labels: no Dice; the plot shows the estimated risk of failure"
            )
        elif ref is None:
            self.message.setText("choose a reference Labels layer")
        elif not self.live and not problems:
            self.message.setText("no prediction yet: run propagation or choose a prediction layer")
        else:
            self.message.setText("; ".join(problems))
        self.plot.setVisible(self.state.kind() != "image")
        scored = ref is not None or not self.state.risk  # else: the risk alone, no Dice
        for w in (self.table, self.recount_button, self.overlay_box, self.overlay_condition):
            w.setVisible(scored)
        self.worst_button.setVisible(scored and self.state.kind() != "image")
        self.overlay.refresh_all(self.overlay_condition.currentText())
        self.refresh()
        self._surface_timer.start()

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
        self._select_current()
        self.refresh_plot()
        self.overlay.refresh_all(self.overlay_condition.currentText())

    # -- edits --------------------------------------------------------------------------
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
        for cond, region in pending.items():
            live = self.live.get(cond)
            if live is None:
                continue
            live.update(region)
            self.surface[cond] = None
            self.overlay.update_region(cond, region)
        if pending:
            self.refresh()
            self._surface_timer.start()

    # -- display ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Redraw the table and the plot from the counters."""
        clean = self.live.get(CLEAN)
        attacked = self.live.get("attacked")
        if clean is None and attacked is not None:
            clean, attacked = attacked, None
        if clean is None:
            self.records = []
        else:
            surf = {
                CLEAN: self.surface.get(CLEAN)
                if CLEAN in self.live
                else self.surface.get("attacked"),
                "attacked": self.surface.get("attacked"),
            }
            records = compare_rows(
                clean.table(), None if attacked is None else attacked.table(), surface=surf
            )
            self.records = self._in_play(records)
        self._fill_table()
        self.refresh_plot()

    def _in_play(self, records: list[dict]) -> list[dict]:
        """Rows of structures some prediction has segmented since binding (all with none)."""
        for rec in records:
            conds = [rec[CLEAN]] + ([rec["attacked"]] if rec["attacked"] else [])
            if any(c.get("volume_pred_ml", 0) > 0 for c in conds):
                self._seen.add(rec["label"])
        shown = [rec for rec in records if rec["label"] in self._seen]
        return shown or records

    def headers(self) -> list[str]:
        """Column titles of the table."""
        both = any(r["attacked"] is not None for r in self.records)
        heads = ["structure"]
        for key in PANEL_KEYS:
            title = METRICS[key].header
            heads += [f"{title} clean", f"{title} att.", f"Δ{title}"] if both else [title]
            if key == "dice" and self.state.uncertainty:
                heads.append(UNC_HEADER)
        return heads

    def cell(self, label: int, header: str) -> str:
        """Text of a cell, by structure id and column title (for tests and export)."""
        col = self.headers().index(header)
        row = [r["label"] for r in self.records].index(int(label))
        return self.table.item(row, col).text()

    def _fill_table(self) -> None:
        heads = self.headers()
        self.table.blockSignals(True)
        self.table.setColumnCount(len(heads))
        self.table.setHorizontalHeaderLabels(heads)
        self.table.setRowCount(len(self.records))
        both = any(r["attacked"] is not None for r in self.records)
        unc = self.state.uncertainty
        for i, rec in enumerate(self.records):
            name = QTableWidgetItem(f"{rec['label']} {rec['name']}")
            swatch = structure_colour(int(rec["label"]), self.state.structures)
            name.setData(Qt.DecorationRole, QColor(swatch))  # its colour in the layers
            self.table.setItem(i, 0, name)
            col = 1
            for key in PANEL_KEYS:
                parts = [(CLEAN, rec[CLEAN][key])]
                if both:
                    att = rec["attacked"] or {}
                    parts += [
                        ("attacked", att.get(key, float("nan"))),
                        ("delta", (rec["delta"] or {}).get(key, float("nan"))),
                    ]
                for cond, value in parts:
                    pending = cond != "delta" and self.surface.get(cond) is None
                    item = QTableWidgetItem(_fmt(key, value, pending, cond == "delta"))
                    colour = None
                    if key == "dice" and cond != "delta":
                        colour = dice_colour(value)
                    elif key == "dice" and np.isfinite(value) and abs(value) >= 0.01:
                        worse = METRICS[key].worse(value, 0.0)
                        colour = (200, 50, 50) if worse else (46, 160, 67)
                    if colour is not None:
                        item.setBackground(QColor(*colour))
                        item.setForeground(QColor(255, 255, 255))
                        # a selected row's highlight would hide the colour: only the
                        # structure's cell shows the selection
                        item.setFlags(item.flags() & ~Qt.ItemIsSelectable)
                    self.table.setItem(i, col, item)
                    col += 1
                if key == "dice" and unc:
                    value = unc.get(int(rec["label"]), float("nan"))
                    item = QTableWidgetItem(UNCERTAINTY.text(value))
                    item.setToolTip(
                        "uncertainty of the clean prediction: mean normalised "
                        "entropy over the structure and its boundary band"
                    )
                    self.table.setItem(i, col, item)
                    col += 1
        self.table.resizeColumnsToContents()
        self.table.blockSignals(False)
        self._select_current()

    def _select_current(self) -> None:
        labels = [r["label"] for r in self.records]
        if self.state.current in labels:
            self.table.blockSignals(True)
            self.table.selectRow(labels.index(self.state.current))
            self.table.blockSignals(False)

    def _row_selected(self) -> None:
        # selectedRows() wants every cell selected; the coloured ones are not selectable
        rows = sorted({index.row() for index in self.table.selectedIndexes()})
        if rows:
            self.state.set_current(self.records[rows[0]]["label"])

    def per_slice(self) -> dict[str, np.ndarray]:
        """Per-slice Dice of the current structure for each condition."""
        label = self.state.current
        if label is None:
            return {}
        return {cond: live.per_slice_dice(int(label)) for cond, live in self.live.items()}

    def refresh_plot(self) -> None:
        """Redraw the per-slice plot of the current structure (extent, kinds, prompts, chain)."""
        if self.state.kind() == "image":
            return
        label = self.state.current
        names = self.state.structures
        colours = {}
        if label is not None and several(names):  # the structure's colours in the layers
            colours = {c: structure_colour(int(label), names, c) for c in self.live}
        self.plot.set_series(self.per_slice(), colours)
        live = self.live.get(CLEAN, self.live.get("attacked"))
        if label is not None and live is not None:
            counts = live.slice_counts(int(label))
            present = (counts[:, 1] > 0) | (counts[:, 2] > 0)
            for other in self.live.values():
                present |= other.slice_counts(int(label))[:, 2] > 0
            self.plot.set_range(slice_extent(present))
            missed, false_positive = slice_kinds(counts)
            predicted = np.flatnonzero(counts[:, 2] > 0)
            ends = (int(predicted[0]), int(predicted[-1])) if predicted.size else None
            prompts = self.state.prompts.get(int(label))
            frames = tuple(prompts.frames) if prompts is not None else ()
            self.plot.set_marks(missed, false_positive, frames, ends)
        self._plot_risk(label, live is not None)
        self._on_step()

    def _plot_risk(self, label: int | None, counted: bool) -> None:
        """The current structure's risk curve and quality stops (spanning them without Dice)."""
        risk = self.state.risk.get(int(label)) if label is not None else None
        layer = self._layer_for_axis0()
        if risk is None or not risk.slices or layer is None or layer.ndim < 3:
            self.plot.set_risk(None)
            self.plot_title.setText(PLOT_TITLE)
            return
        curve = np.full(layer.data.shape[0], np.nan)
        for s in risk.slices:
            if 0 <= s.slice < len(curve):
                curve[s.slice] = s.risk
        self.plot.set_risk(curve, tuple(k for k, _ in risk.stops))
        self.plot_title.setText(RISK_TITLE if counted else RISK_ONLY_TITLE)
        if not counted:
            described = np.isfinite(curve)
            self.plot.set_range(slice_extent(described, margin=0.0, min_margin=1))
            predicted = [s.slice for s in risk.slices if s.area > 0]
            ends = (min(predicted), max(predicted)) if predicted else None
            prompts = self.state.prompts.get(int(label))
            frames = tuple(prompts.frames) if prompts is not None else ()
            self.plot.set_marks(None, None, frames, ends)

    # -- navigation ---------------------------------------------------------------------
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

    # -- surface metrics ----------------------------------------------------------------
    def _start_surface(self) -> None:
        from napari_segeval._widgets.jobs.tasks import surface_rows

        if not self.live or self.state.reference is None:
            return
        if self.surface_runner.running:
            self.surface_runner.cancel()
            self._surface_timer.start()
            return
        ref = self.state.reference
        preds = {c: self.state.predictions[c] for c in self.live}
        pairs = {c: (ref.data, pred.data) for c, pred in preds.items()}
        self.surface_runner.start(
            "surface metrics",
            surface_rows,
            pairs,
            self.state.spacing(),
            self.state.structures or self._structure_names(),
            needs=[ref, *preds.values()],
            on_done=self._surface_done,
        )

    def _structure_names(self) -> dict[int, str]:
        live = next(iter(self.live.values()))
        return {r["label"]: r["name"] for r in live.table()}

    def _surface_done(self, rows: dict[str, list]) -> None:
        if self._pending or self._surface_timer.isActive():
            return  # an edit arrived meanwhile: the next run brings fresh values
        for cond, value in rows.items():
            if cond in self.live:
                self.surface[cond] = value
        self.refresh()

    def _overlay_toggled(self, *_: Any) -> None:
        if self.overlay_box.isChecked():
            run_guarded("overlay", lambda: self.overlay.show(self.overlay_condition.currentText()))
        else:
            self.overlay.hide()

    def closeEvent(self, event) -> None:
        self._unhook()
        self._unlisten()
        super().closeEvent(event)
