"""The table of the *Results* panel: a Qt model of result rows and a sorting/filtering proxy."""

from __future__ import annotations

import math
from typing import Any, TypeVar, cast

from qtpy.QtCore import (
    QItemSelectionModel,
    QModelIndex,
    QSignalBlocker,
    QSortFilterProxyModel,
    Qt,
)
from qtpy.QtGui import QStandardItem, QStandardItemModel
from qtpy.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from napari_segeval.metrics.catalog import METRICS

#: (row key, header, tooltip) of every column the model can show (a metric's header and
#: tooltip: :data:`napari_segeval.metrics.METRICS`).
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("case", "case", "case id"),
    ("structure", "structure", "structure name"),
    ("condition", "condition", "clean, or the attack with its parameters"),
    ("model", "model", "the model of the prediction, in a run of several models"),
    ("round", "round", "correction round of an interactive run (0: the first propagation)"),
    ("fold", "fold", "cross-validation fold"),
    *(
        (m.name, m.header, m.doc)
        for m in (METRICS[k] for k in ("dice", "risk", "delta_dice", "hd95", "nsd", "uncertainty"))
    ),
    ("reviewed", "reviewed", "the case is marked reviewed (saved in the folder's review.json)"),
)
#: Always shown; the other columns only when some row has a value (the model column:
#: when the rows hold several models; Dice: unless the rows have risks and no Dice).
ALWAYS = ("case", "structure", "condition", "dice")
REVIEWED = "✓"
#: Columns whose value is no score on an absence (sorted last, Dice shown as "absent").
SCORES = ("dice", "delta_dice", "hd95", "nsd")
ABSENT = "absent"
ALL = "(all)"
T = TypeVar("T", bound=QTableView)
SORT_ROLE = Qt.ItemDataRole.UserRole


def _has_value(v: Any) -> bool:
    return not (v is None or v == "" or (isinstance(v, float) and math.isnan(v)))


def _text(key: str, v: Any) -> str:
    if key in METRICS:
        return METRICS[key].text(v)
    if key == "reviewed":
        return REVIEWED if v else ""
    return str(v) if _has_value(v) else "-"


class ResultsModel(QStandardItemModel):
    """Result rows as a read-only table; the columns without any value are left out."""

    def __init__(self, rows: list[dict] | None = None) -> None:
        super().__init__()
        self.rows: list[dict] = []
        self.columns: list[tuple[str, str, str]] = []
        self.set_rows(rows or [])

    def set_rows(self, rows: list[dict]) -> None:
        """Replace the rows (and choose the columns that have values)."""
        self.rows = list(rows)
        several = len({r.get("model") for r in self.rows}) > 1
        has = {c[0]: any(_has_value(r.get(c[0])) for r in self.rows) for c in COLUMNS}
        no_dice = has["risk"] and not has["dice"]  # a run without a reference
        self.columns = [
            c
            for c in COLUMNS
            if (c[0] in ALWAYS and not (no_dice and c[0] == "dice"))
            or (several if c[0] == "model" else has[c[0]])
        ]
        self.clear()
        self.setHorizontalHeaderLabels([header for _, header, _ in self.columns])
        for j, (_, _, tip) in enumerate(self.columns):
            cast(QStandardItem, self.horizontalHeaderItem(j)).setToolTip(tip)
        for row in self.rows:
            self.appendRow([self._item(row, key) for key, _, _ in self.columns])

    @staticmethod
    def _item(row: dict, key: str) -> QStandardItem:
        """The cell of ``row``'s ``key``: its text, sort value and, for an absence, why."""
        value = row.get(key)
        absent = bool(row.get("absent")) and key in SCORES
        item = QStandardItem(ABSENT if absent and key == "dice" else _text(key, value))
        if absent:
            item.setToolTip(
                f"{row.get('structure')} is in neither the reference nor the prediction: "
                f"an absence, not a failure (scored {_text(key, value)} by the protocol's "
                "empty rule)"
            )
        if absent or value is None:
            item.setData(math.nan, SORT_ROLE)  # after every real score
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            item.setData(float(value), SORT_ROLE)
        else:
            item.setData(str(value), SORT_ROLE)
        if isinstance(value, (int, float)):
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return item

    def set_reviewed(self, cases: set[str]) -> None:
        """Mark the rows of ``cases`` reviewed (and the others not)."""
        col = self.column("reviewed")
        with QSignalBlocker(self):  # one dataChanged: a sorted proxy would sort once per row
            for i, r in enumerate(self.rows):
                r["reviewed"] = r["case"] in cases
                if col >= 0:
                    self.setItem(i, col, self._item(r, "reviewed"))
        if col >= 0 and self.rows:
            self.dataChanged.emit(self.index(0, col), self.index(len(self.rows) - 1, col))

    def column(self, key: str) -> int:
        """Index of the column showing ``key`` (-1 when not shown)."""
        keys = [c[0] for c in self.columns]
        return keys.index(key) if key in keys else -1


class ResultsProxy(QSortFilterProxyModel):
    """Filters rows by structure, condition, fold and absence; sorts numbers with NaN last."""

    def __init__(self) -> None:
        super().__init__()
        self.filters: dict[str, str] = {"structure": ALL, "condition": ALL, "fold": ALL}
        self.show_absent = True
        self.setSortRole(SORT_ROLE)

    def set_filter(self, key: str, value: str) -> None:
        """Show only rows whose ``key`` is ``value`` (:data:`ALL`: no filter)."""
        self.filters[key] = value
        self.invalidateFilter()

    def set_show_absent(self, show: bool) -> None:
        """Show (True) or hide the absences (rows marked ``absent``)."""
        self.show_absent = bool(show)
        self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex) -> bool:
        row = cast(ResultsModel, self.sourceModel()).rows[source_row]
        if not self.show_absent and row.get("absent"):
            return False
        return all(w in (ALL, filter_text(row, k)) for k, w in self.filters.items())

    def lessThan(self, left: QModelIndex, right: QModelIndex) -> bool:
        a, b = left.data(SORT_ROLE), right.data(SORT_ROLE)
        nan_a = isinstance(a, float) and math.isnan(a)
        nan_b = isinstance(b, float) and math.isnan(b)
        if nan_a or nan_b:  # missing values last, whichever the direction
            descending = self.sortOrder() == Qt.SortOrder.DescendingOrder
            return (nan_a and not nan_b) if descending else (nan_b and not nan_a)
        return a < b if isinstance(a, float) and isinstance(b, float) else str(a) < str(b)

    def row(self, proxy_row: int) -> dict:
        source = self.mapToSource(self.index(proxy_row, 0)).row()
        return cast(ResultsModel, self.sourceModel()).rows[source]


def filter_text(row: dict, key: str) -> str:
    """How a filter shows the ``key`` of ``row`` (a fold: ``"-"`` for none)."""
    value = row.get(key)
    return "-" if key == "fold" and value in (None, "") else str(value)


def rows_table(view: T) -> T:
    """``view`` set up as a table of rows: one selected at a time, read-only, no row numbers."""
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    cast(QHeaderView, view.verticalHeader()).setVisible(False)
    return view


def selection(view: QAbstractItemView) -> QItemSelectionModel:
    """The selection model of ``view`` (a view with a model has one)."""
    return cast(QItemSelectionModel, view.selectionModel())


def selected_row(view: QAbstractItemView) -> int | None:
    """The row selected in ``view`` (None: none)."""
    rows = selection(view).selectedRows()
    return rows[0].row() if rows else None
