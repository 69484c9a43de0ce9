"""The panels' forms: magicgui inputs, each in a row beside its label."""

from __future__ import annotations

from magicgui.widgets import Widget
from qtpy.QtWidgets import QFormLayout, QWidget


def form(*widgets: Widget) -> QWidget:
    """A Qt form of magicgui ``widgets``: one row each, labelled by its ``label``, no margins.

    A ``QFormLayout``, not a magicgui ``Container``: under napari's stylesheet the latter
    pushes a long label's input out of line with the others.
    """
    box = QWidget()
    layout = QFormLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        layout.addRow(widget.label, widget.native)
    return box
