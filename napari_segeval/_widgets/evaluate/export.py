"""The *Export* panel: predictions with the source geometry, the metrics table, a screenshot."""

from __future__ import annotations

import csv
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from magicgui.widgets import ComboBox
from qtpy.QtWidgets import QFileDialog

from napari_segeval._atomic import atomic_open
from napari_segeval._widgets._form import confirm_replace, form, text_line, vbox
from napari_segeval._widgets._state import CONDITIONS, Panel, ViewerState
from napari_segeval._widgets.jobs.worker import button
from napari_segeval._widgets.overlays.arrays import PANEL_KEYS

LABEL_FILTER = "Label maps (*.nii.gz *.nii *.mha *.nrrd)"


class ExportPanel(Panel):
    """Save predictions (NIfTI/MHA/NRRD), metrics (CSV) and a screenshot (PNG)."""

    def __init__(
        self, napari_viewer: Any, state: ViewerState, records: Callable[[], list[dict]]
    ) -> None:
        super().__init__(napari_viewer, state)
        self.records = records
        self.condition = ComboBox(label="prediction", choices=list(CONDITIONS))
        self.status = text_line()
        buttons = [
            button(text, "", partial(self._ask, filter_, action), "export")
            for text, filter_, action in (
                ("Save prediction...", LABEL_FILTER, self.save_prediction),
                ("Save metrics CSV...", "CSV (*.csv)", self.save_metrics),
                ("Save screenshot...", "PNG (*.png)", self.save_screenshot),
            )
        ]
        vbox(self, form(self.condition), *buttons, self.status, 1)

    def _ask(self, filter_: str, action: Callable[[Path], Any]) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Save as", "", filter_, options=QFileDialog.Option.DontConfirmOverwrite
        )
        if path:
            action(Path(path))

    def _save(self, path: Path, what: str, write: Callable[[Path], Any]) -> Path | None:
        """``write(path)`` once the person agrees to replace a file there; says what happened."""
        out = Path(path) if confirm_replace(self, path) else None
        if out is not None:
            write(out)
        self.status.setText(f"saved {what} to {out}" if out else f"{what} not saved")
        return out

    def save_prediction(self, path: Path, condition: str | None = None) -> Path | None:
        """Write a prediction with the image's geometry (``io.write_labels``)."""
        from napari_segeval.io import write_labels

        condition = condition or self.condition.value
        layer = self.state.predictions.get(condition)
        if layer is None:
            raise ValueError(f"no {condition} prediction to save")
        data, geometry = np.asarray(layer.data), self.state.geometry()
        return self._save(
            path,
            f"{condition} prediction",
            lambda p: write_labels(p, data, geometry, overwrite=True),
        )

    def save_metrics(self, path: Path) -> Path | None:
        """Write the Dice panel's table as CSV (one row per structure and condition)."""
        rows = [
            {"label": rec["label"], "name": rec["name"], "condition": cond}
            | {k: values.get(k, float("nan")) for k in PANEL_KEYS}
            for rec in self.records()
            for cond in CONDITIONS
            if (values := rec.get(cond)) is not None
        ]
        if not rows:
            raise ValueError("no metrics yet: choose a reference and a prediction")

        def write(path: Path) -> None:
            with atomic_open(path, "w", overwrite=True, newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)

        return self._save(path, "metrics", write)

    def save_screenshot(self, path: Path, canvas_only: bool = False) -> Path | None:
        """Save a screenshot of the viewer (window, or canvas only)."""
        return self._save(
            path,
            "screenshot",
            lambda p: self.viewer.screenshot(path=str(p), canvas_only=canvas_only),
        )
