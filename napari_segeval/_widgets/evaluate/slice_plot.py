"""A light per-slice Dice (and risk) plot drawn with QPainter; a click picks a slice."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from qtpy.QtCore import QPointF, QRectF, Qt, Signal
from qtpy.QtGui import QColor, QPainter, QPainterPath, QPen
from qtpy.QtWidgets import QSizePolicy, QWidget

from napari_segeval._names import CLEAN
from napari_segeval._widgets.colours import (
    NEGATIVE_COLOUR,
    POSITIVE_COLOUR,
    PROMPT_COLOUR,
    RISK_COLOUR,
    ROLE_COLOURS,
)
from napari_segeval.metrics.catalog import METRICS, RISK

#: Colours of the series by condition (the predictions' colours with one structure).
SERIES_COLOURS = {c: QColor(ROLE_COLOURS[c]) for c in (CLEAN, "attacked")}
X_TITLE = "slice"
Y_TITLE = METRICS["dice"].title


class SlicePlot(QWidget):
    """Per-slice Dice of one structure by condition (NaN: absent from both maps), slices
    ``lo`` to ``hi`` on x; ``risk`` per slice (NaN: not estimated; empty: none)."""

    slice_clicked = Signal(int)
    LEFT, RIGHT, TOP, BOTTOM = 34, 8, 14, 34
    #: Height of the missed / false-positive marks under the axis.
    MARK_H = 5

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.series: dict[str, np.ndarray] = {}
        self.colours: dict[str, QColor] = dict(SERIES_COLOURS)
        self.current: int | None = None
        self.risk = np.zeros(0)
        self.stops: tuple[int, ...] = ()
        self._reset(0)
        self.setMinimumHeight(112)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setToolTip(
            "Dice per slice (lines: clean, attacked); under the axis: green = missed "
            "(reference, no prediction), magenta = false positive (prediction, no "
            "reference); dashed white: prompted slice; ticks at the top: the ends of "
            "the propagated chain; dashed orange: estimated risk of failure (no "
            "reference needed), dotted orange 'stop': the model stopped the chain there. "
            "Click to go to a slice"
        )

    def _reset(self, n: int) -> None:
        """``n`` slices, all shown, none marked."""
        self.n, self.lo, self.hi = n, 0, max(n - 1, 0)
        self.set_marks()

    def set_series(
        self, series: dict[str, np.ndarray], colours: dict[str, str] | None = None
    ) -> None:
        """Replace the curves (``{condition: per-slice Dice}``) and their ``colours``."""
        self.series = {k: np.asarray(v, float) for k, v in series.items()}
        self.colours = dict(SERIES_COLOURS)
        self.colours.update({k: QColor(v) for k, v in (colours or {}).items()})
        self._reset(max((len(v) for v in self.series.values()), default=len(self.risk)))

    def set_risk(self, risk: np.ndarray | None, stops: tuple[int, ...] = ()) -> None:
        """Draw the risk per slice (None: no curve), mark ``stops``; after :meth:`set_series`
        (without Dice curves the risk sets the number of slices)."""
        self.risk = np.zeros(0) if risk is None else np.asarray(risk, float)
        self.stops = tuple(int(i) for i in stops) if risk is not None else ()
        if not self.series:
            self._reset(len(self.risk))
        self.update()

    def y_title(self) -> str:
        """The y axis's title: what the curves are."""
        titles = [Y_TITLE] * bool(self.series) + [RISK.title] * bool(len(self.risk))
        return ", ".join(titles) or Y_TITLE

    def set_range(self, extent: tuple[int, int] | None) -> None:
        """Show slices ``extent[0]`` to ``extent[1]`` (None: every slice)."""
        if extent is None or not self.n:
            self.lo, self.hi = 0, max(self.n - 1, 0)
        else:
            self.lo = int(min(max(extent[0], 0), self.n - 1))
            self.hi = int(min(max(extent[1], self.lo), self.n - 1))
        self.update()

    def set_marks(
        self,
        missed: np.ndarray | None = None,
        false_positive: np.ndarray | None = None,
        prompts: tuple[int, ...] = (),
        ends: tuple[int, int] | None = None,
    ) -> None:
        """Mark missed and false-positive slices, prompted slices and the chain's ends."""
        empty = np.zeros(self.n, bool)
        self.missed = empty if missed is None else np.asarray(missed, bool)
        self.false_positive = empty if false_positive is None else np.asarray(false_positive, bool)
        self.prompts = tuple(int(i) for i in prompts)
        self.ends = None if ends is None else (int(ends[0]), int(ends[1]))
        self.update()

    def set_current(self, index: int | None) -> None:
        if index != self.current:
            self.current = index
            self.update()

    def _plot_rect(self) -> QRectF:
        w, h = self.width() - self.LEFT - self.RIGHT, self.height() - self.TOP - self.BOTTOM
        return QRectF(self.LEFT, self.TOP, max(w, 1), max(h, 1))

    def x_of(self, index: float) -> float:
        """Widget x coordinate of slice ``index``."""
        r = self._plot_rect()
        if self.hi <= self.lo:
            return r.left() + r.width() / 2
        return r.left() + r.width() * (index - self.lo) / (self.hi - self.lo)

    def index_at(self, x: float) -> int | None:
        """Slice under widget x coordinate ``x`` (None without data)."""
        if self.n == 0:
            return None
        r = self._plot_rect()
        span = self.hi - self.lo
        frac = 0.0 if span <= 0 else (x - r.left()) / max(r.width(), 1.0)
        return int(min(max(round(self.lo + frac * span), self.lo), self.hi))

    def shown(self, index: int) -> bool:
        """True when slice ``index`` is in the plotted range."""
        return self.n > 0 and self.lo <= index <= self.hi

    def mousePressEvent(self, event: Any) -> None:
        pos = event.pos() if hasattr(event, "pos") else event.position()
        index = self.index_at(float(pos.x()))
        if index is not None:
            self.slice_clicked.emit(index)

    def paintEvent(self, event: Any) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = self._plot_rect()
        self._axes(painter, r)
        if self.n:
            self._slice_marks(painter, r)
            for _, values, colour, style in self._curves():
                painter.setPen(QPen(colour, 1.5, style))
                painter.drawPath(self._path(values, r))
            self._chain_marks(painter, r)
            self._legend(painter, r)
        painter.setPen(QPen(QColor(255, 255, 255, 160), 1))
        self._lines(painter, r, () if self.current is None else (self.current,))
        painter.end()

    def _curves(self) -> list[tuple[str, np.ndarray, QColor, Qt.PenStyle]]:
        """The lines drawn: name, values, colour and style (Dice solid, risk dashed)."""
        solid = Qt.PenStyle.SolidLine
        curves = [
            (k, v, self.colours.get(k, QColor("white")), solid) for k, v in self.series.items()
        ]
        if len(self.risk):
            curves.append((RISK.title, self.risk, QColor(RISK_COLOUR), Qt.PenStyle.DashLine))
        return curves

    def _lines(self, painter: QPainter, r: QRectF, slices: Iterable[int], up: int = 0) -> None:
        """A vertical line at each shown slice of ``slices``; ``up``: ticks above the plot."""
        for i in (i for i in slices if self.shown(i)):
            x = self.x_of(i)
            top, bottom = (r.top() - up, r.top() + 4) if up else (r.top(), r.bottom())
            painter.drawLine(QPointF(x, top), QPointF(x, bottom))

    def _axes(self, painter: QPainter, r: QRectF) -> None:
        grey = QColor(150, 150, 150)
        painter.setPen(QPen(grey, 1))
        painter.drawRect(r)
        y = r.bottom() - 0.5 * r.height()
        painter.setPen(QPen(grey, 1, Qt.PenStyle.DotLine))
        painter.drawLine(QPointF(r.left(), y), QPointF(r.right(), y))
        painter.setPen(QPen(grey, 1))
        painter.drawText(QPointF(r.left() - 12, r.top() + 8), "1")
        painter.drawText(QPointF(r.left() - 12, r.bottom()), "0")
        painter.save()  # the y title, upright along the axis
        painter.translate(12, r.center().y() + 12)
        painter.rotate(-90)
        painter.drawText(QPointF(0, 0), self.y_title())
        painter.restore()
        base = r.bottom() + self.MARK_H + 14
        if self.n:
            painter.drawText(QPointF(r.left(), base), str(self.lo))
            painter.drawText(QPointF(r.right() - 24, base), str(self.hi))
        painter.drawText(QPointF(r.center().x() - 14, base + 12), X_TITLE)

    def _slice_marks(self, painter: QPainter, r: QRectF) -> None:
        """Missed and false-positive slices as short bars under the axis."""
        half = max(r.width() / max(self.hi - self.lo + 1, 1) / 2, 1.0)
        for mask, colour in (
            (self.missed, POSITIVE_COLOUR),
            (self.false_positive, NEGATIVE_COLOUR),
        ):
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(colour))
            for x in (self.x_of(i) for i in np.flatnonzero(mask).tolist() if self.shown(i)):
                painter.drawRect(QRectF(x - half, r.bottom() + 2, 2 * half, self.MARK_H))
        painter.setBrush(Qt.BrushStyle.NoBrush)

    def _chain_marks(self, painter: QPainter, r: QRectF) -> None:
        """Prompted slices dashed; the chain's ends as ticks above the plot."""
        painter.setPen(QPen(QColor(PROMPT_COLOUR), 1, Qt.PenStyle.DashLine))
        self._lines(painter, r, self.prompts)
        painter.setPen(QPen(QColor(RISK_COLOUR), 1.5, Qt.PenStyle.DotLine))
        self._lines(painter, r, self.stops)
        for i in (i for i in self.stops if self.shown(i)):
            painter.drawText(QPointF(self.x_of(i) + 3, r.bottom() - 4), f"stop ({i})")
        painter.setPen(QPen(self.colours.get(CLEAN, QColor("white")), 2))
        self._lines(painter, r, self.ends or (), up=8)

    def _legend(self, painter: QPainter, r: QRectF) -> None:
        """What the lines are, top right inside the plot (only with a risk curve)."""
        if not len(self.risk):
            return
        metrics = painter.fontMetrics()
        x = r.right() - 6
        for name, _, colour, style in reversed(self._curves()):
            text = Y_TITLE if name == CLEAN and len(self.series) == 1 else name
            width = metrics.horizontalAdvance(text)
            x -= width
            painter.setPen(QPen(colour, 1))
            painter.drawText(QPointF(x, r.top() + 12), text)
            painter.setPen(QPen(colour, 1.5, style))
            painter.drawLine(QPointF(x - 16, r.top() + 8), QPointF(x - 3, r.top() + 8))
            x -= 26

    def _path(self, values: np.ndarray, r: QRectF) -> QPainterPath:
        """The line through the finite values shown, a dot where each piece starts."""
        path, pen_down = QPainterPath(), False
        for i, v in enumerate(values):
            drawn = bool(np.isfinite(v)) and self.shown(i)
            if drawn:
                point = QPointF(self.x_of(i), r.bottom() - float(v) * r.height())
                if pen_down:
                    path.lineTo(point)
                else:
                    path.addEllipse(point, 1.0, 1.0)
                    path.moveTo(point)
            pen_down = drawn
        return path
