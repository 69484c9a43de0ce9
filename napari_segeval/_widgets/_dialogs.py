"""Questions the panels ask in a dialog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qtpy.QtWidgets import QMessageBox


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
