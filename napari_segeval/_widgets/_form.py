"""The panels' layouts (magicgui forms, rows, columns, wrapped text lines) and questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from magicgui.widgets import Widget
from qtpy.QtWidgets import (
    QBoxLayout,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

Item = QWidget | QLayout | int


def form(*widgets: Widget) -> QWidget:
    """A Qt form of magicgui ``widgets`` (one labelled row each, no margins): not a magicgui
    ``Container``, which under napari's stylesheet pushes a long label's input out of line."""
    box = QWidget()
    layout = QFormLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        layout.addRow(widget.label, widget.native)
    return box


def _fill(layout: QBoxLayout, items: tuple[Item, ...], stretch: QWidget | None) -> None:
    for item in items:
        if isinstance(item, int):
            layout.addStretch(item)
        elif isinstance(item, QLayout):
            layout.addLayout(item)
        else:
            layout.addWidget(item, item is stretch)


def hbox(*items: Item, stretch: QWidget | None = None) -> QHBoxLayout:
    """A row of ``items`` (widgets, layouts, an int: a stretch); ``stretch`` takes the room left."""
    row = QHBoxLayout()
    _fill(row, items, stretch)
    return row


def vbox(
    parent: QWidget | None, *items: Item, tight: bool = False, stretch: QWidget | None = None
) -> QVBoxLayout:
    """``parent``'s column of ``items`` (as :func:`hbox`'s); ``tight``: no margins."""
    column = QVBoxLayout() if parent is None else QVBoxLayout(parent)
    if tight:
        column.setContentsMargins(0, 0, 0, 0)
    _fill(column, items, stretch)
    return column


def text_line(text: str = "") -> QLabel:
    """A word-wrapped label: a status line, a message."""
    label = QLabel(text)
    label.setWordWrap(True)
    return label


def confirm_replace(parent: Any, path: str | Path) -> bool:
    """True when ``path`` is free, or the person agrees to replace it (``parent`` asks)."""
    if not Path(path).exists():
        return True
    answer = QMessageBox.question(
        parent,
        "Replace file?",
        f"{path} exists. Replace it?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.No,
    )
    return answer == QMessageBox.StandardButton.Yes
