"""The *Dice* panel's table: a row per structure, each metric per condition, Dice coloured."""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial

import numpy as np
from qtpy.QtCore import QSignalBlocker, Qt
from qtpy.QtGui import QColor
from qtpy.QtWidgets import QAbstractItemView, QTableWidget, QTableWidgetItem

from napari_segeval._names import CLEAN
from napari_segeval._widgets._state import ViewerState
from napari_segeval._widgets.colours import structure_colour
from napari_segeval._widgets.overlays.arrays import PANEL_KEYS, dice_colour
from napari_segeval.metrics.catalog import METRICS, UNCERTAINTY

SURFACE_KEYS = ("hd95", "nsd")
#: The columns of a metric per condition shown: (record key, header of ``title``).
PARTS = {
    False: ((CLEAN, "{}"),),
    True: ((CLEAN, "{} clean"), ("attacked", "{} att."), ("delta", "Δ{}")),
}
UNC_HEADER = UNCERTAINTY.header
Column = tuple[str, Callable[[dict], QTableWidgetItem]]


class DiceTable(QTableWidget):
    """``compare_rows`` records as a table; selecting a row sets the state's structure."""

    def __init__(self, state: ViewerState) -> None:
        super().__init__(0, 1)
        self.case_state = state
        self.records: list[dict] = []
        #: the parts (conditions, ``delta``) whose surface metrics are still being computed
        self.computing: Collection[str] = ()
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setMinimumHeight(90)
        self.itemSelectionChanged.connect(self._row_selected)

    def columns(self) -> list[Column]:
        """The table's columns: title, and the cell it shows of a record."""
        both = any(r["attacked"] is not None for r in self.records)
        cols: list[Column] = [("structure", self._name_cell)]
        for key in PANEL_KEYS:
            title = METRICS[key].header
            cols += [(head.format(title), partial(self._cell, key, p)) for p, head in PARTS[both]]
            if key == "dice" and self.case_state.uncertainty:
                cols.append((UNC_HEADER, self._uncertainty_cell))
        return cols

    def headers(self) -> list[str]:
        return [title for title, _ in self.columns()]

    def cell(self, label: int, header: str) -> str:
        """Text of a cell, by structure id and column title (for tests and export)."""
        col = self.headers().index(header)
        row = [r["label"] for r in self.records].index(int(label))
        item = self.item(row, col)
        return "" if item is None else item.text()

    def _name_cell(self, rec: dict) -> QTableWidgetItem:
        item = QTableWidgetItem(f"{rec['label']} {rec['name']}")
        swatch = structure_colour(int(rec["label"]), self.case_state.structures)
        item.setData(Qt.ItemDataRole.DecorationRole, QColor(swatch))  # its colour in the layers
        return item

    def _cell(self, key: str, part: str, rec: dict) -> QTableWidgetItem:
        """A metric of the clean or attacked prediction, or their difference, coloured for Dice."""
        value = (rec[part] or {}).get(key, float("nan"))
        delta = part == "delta"
        computing = part in self.computing and key in SURFACE_KEYS and not delta
        text = "..." if computing and np.isnan(value) else METRICS[key].text(value, delta)
        item = QTableWidgetItem(text)
        colour = None
        if key == "dice" and not delta:
            colour = dice_colour(value)
        elif key == "dice" and np.isfinite(value) and abs(value) >= 0.01:
            colour = dice_colour(0.0 if METRICS[key].worse(value, 0.0) else 1.0)  # red or green
        if colour is not None:
            item.setBackground(QColor(*colour))
            item.setForeground(QColor(255, 255, 255))
            # a selected row's highlight would hide the colour: only the structure's cell
            # shows the selection
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsSelectable)
        return item

    def _uncertainty_cell(self, rec: dict) -> QTableWidgetItem:
        score = self.case_state.uncertainty.get(int(rec["label"]))
        item = QTableWidgetItem(UNCERTAINTY.text(score))
        item.setToolTip(
            "uncertainty of the clean prediction: mean normalised entropy over the structure "
            "and its boundary band"
        )
        return item

    def fill(self, records: list[dict], computing: Collection[str]) -> None:
        """Show ``records``, the surface metrics of the ``computing`` parts as ``...``."""
        self.records, self.computing = records, computing
        cols = self.columns()
        with QSignalBlocker(self):
            self.setColumnCount(len(cols))
            self.setHorizontalHeaderLabels([title for title, _ in cols])
            self.setRowCount(len(records))
            for i, rec in enumerate(records):
                for j, (_, make) in enumerate(cols):
                    self.setItem(i, j, make(rec))
            self.resizeColumnsToContents()
        self.select_current()

    def select_current(self) -> None:
        """Select the row of the state's current structure (no selection signal)."""
        labels = [r["label"] for r in self.records]
        if self.case_state.current in labels:
            with QSignalBlocker(self):
                self.selectRow(labels.index(self.case_state.current))

    def _row_selected(self) -> None:
        # selectedRows() wants every cell selected; the coloured ones are not selectable
        rows = sorted({index.row() for index in self.selectedIndexes()})
        if rows:
            self.case_state.set_current(self.records[rows[0]]["label"])
