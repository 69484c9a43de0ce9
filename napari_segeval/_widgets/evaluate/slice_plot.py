"""A light per-slice Dice plot drawn with QPainter; a click picks a slice."""

from __future__ import annotations

import numpy as np
from qtpy.QtCore import QPointF, QRectF, Qt, Signal
from qtpy.QtGui import QColor, QPainter, QPainterPath, QPen
from qtpy.QtWidgets import QSizePolicy, QWidget

from napari_segeval._widgets.colours import ROLE_COLOURS

#: Colours of the series by condition (the predictions' colours with one structure).
SERIES_COLOURS = {c: QColor(ROLE_COLOURS[c]) for c in ("clean", "attacked")}


class SlicePlot(QWidget):
    """Per-slice Dice (0..1) of one structure for each condition, slice index on x.

    ``slice_clicked(int)`` is emitted with the slice under a mouse click.
    """

    slice_clicked = Signal(int)
    MARGIN = 22

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.series: dict[str, np.ndarray] = {}
        self.current: int | None = None
        self.n = 0
        self.setMinimumHeight(110)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Preferred)
        self.setToolTip("Dice per slice (blue: clean, orange: attacked); click to go to a slice")

    def set_series(self, series: dict[str, np.ndarray]) -> None:
        """Replace the curves (``{condition: per-slice Dice}``, NaN = structure absent)."""
        self.series = {k: np.asarray(v, float) for k, v in series.items()}
        self.n = max((len(v) for v in self.series.values()), default=0)
        self.update()

    def set_current(self, index: int | None) -> None:
        """Mark the slice shown in the viewer."""
        if index != self.current:
            self.current = index
            self.update()

    # -- geometry --------------------------------------------------------------------
    def _plot_rect(self) -> QRectF:
        m = self.MARGIN
        return QRectF(m, 6, max(self.width() - m - 8, 1), max(self.height() - m - 6, 1))

    def x_of(self, index: float) -> float:
        """Widget x coordinate of slice ``index``."""
        r = self._plot_rect()
        if self.n <= 1:
            return r.left() + r.width() / 2
        return r.left() + r.width() * index / (self.n - 1)

    def index_at(self, x: float) -> int | None:
        """Slice under widget x coordinate ``x`` (None without data)."""
        if self.n == 0:
            return None
        r = self._plot_rect()
        frac = 0.0 if self.n <= 1 else (x - r.left()) / max(r.width(), 1.0)
        return int(min(max(round(frac * (self.n - 1)), 0), self.n - 1))

    # -- Qt events -------------------------------------------------------------------
    def mousePressEvent(self, event) -> None:
        pos = event.pos() if hasattr(event, "pos") else event.position()
        index = self.index_at(float(pos.x()))
        if index is not None:
            self.slice_clicked.emit(index)

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        r = self._plot_rect()
        grey = QColor(150, 150, 150)
        painter.setPen(QPen(grey, 1))
        painter.drawRect(r)
        for level in (0.5,):
            y = r.bottom() - level * r.height()
            painter.setPen(QPen(grey, 1, Qt.DotLine))
            painter.drawLine(QPointF(r.left(), y), QPointF(r.right(), y))
        painter.setPen(QPen(grey, 1))
        painter.drawText(QPointF(2, r.top() + 10), "1")
        painter.drawText(QPointF(2, r.bottom()), "0")
        if self.n:
            painter.drawText(QPointF(r.left(), self.height() - 4), "0")
            painter.drawText(QPointF(r.right() - 24, self.height() - 4), str(self.n - 1))
        for name, values in self.series.items():
            painter.setPen(QPen(SERIES_COLOURS.get(name, QColor("white")), 1.5))
            painter.drawPath(self._path(values, r))
        if self.current is not None and self.n:
            painter.setPen(QPen(QColor(255, 255, 255, 160), 1))
            x = self.x_of(self.current)
            painter.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()))
        painter.end()

    def _path(self, values: np.ndarray, r: QRectF) -> QPainterPath:
        path = QPainterPath()
        pen_down = False
        for i, v in enumerate(values):
            if not np.isfinite(v):
                pen_down = False
                continue
            point = QPointF(self.x_of(i), r.bottom() - float(v) * r.height())
            if pen_down:
                path.lineTo(point)
            else:
                path.moveTo(point)
                path.addEllipse(point, 1.0, 1.0)
                path.moveTo(point)
                pen_down = True
        return path
