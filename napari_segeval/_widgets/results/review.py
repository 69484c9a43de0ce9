"""Review a run without a reference (in the *Results* panel): flagged slices, reviewed cases."""

from __future__ import annotations

from typing import Any

from qtpy.QtCore import Qt, Signal
from qtpy.QtWidgets import QListWidget, QListWidgetItem, QPushButton, QWidget

from napari_segeval._widgets._form import text_line, vbox
from napari_segeval._widgets.jobs.worker import error_message, run_guarded, show_error

SLICE_ROLE = Qt.ItemDataRole.UserRole
MARK, UNMARK = "Mark case reviewed", "Reviewed ✓ (click to undo)"


def flagged_text(s: Any) -> str:
    """A flagged slice ``s`` (a ``SliceRisk``) as the list shows it."""
    why = "; ".join(f.value for f in s.flags) or "not flagged: the riskiest slice"
    return f"slice {s.slice} (risk {s.risk:.2f}): {why}"


class ReviewBox(QWidget):
    """Flagged slices of the row's structure and the case's *reviewed* mark (``log`` None:
    no folder, or an unreadable ``review.json``)."""

    slice_chosen = Signal(int)
    reviewed_changed = Signal(str, bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.log: Any = None
        self.case: str | None = None
        self.title = text_line()
        self.flagged = QListWidget()
        self.flagged.setMaximumHeight(110)
        self.flagged.setWordWrap(True)
        self.flagged.setToolTip("the slices to look at, riskiest first (click: go there)")
        self.flagged.itemClicked.connect(
            lambda item: self.slice_chosen.emit(int(item.data(SLICE_ROLE)))
        )
        self.mark_button = QPushButton(MARK)
        self.mark_button.setCheckable(True)
        self.mark_button.setEnabled(False)
        self.mark_button.setToolTip("saved at once in DIR/review.json (kept when napari closes)")
        self.mark_button.clicked.connect(self._mark_clicked)
        vbox(self, self.title, self.flagged, self.mark_button, tight=True)

    def open(self, folder: Any) -> None:
        """Read the review of results ``folder`` (an unreadable file is shown, not replaced)."""
        from napari_segeval.evaluation.review import ReviewLog

        self.case = None
        self.show_risk(None, "", has_risk=folder.has_risk)
        try:
            self.log = ReviewLog.load(folder.path)
        except Exception as exc:  # noqa: BLE001 - a notification, review disabled
            self.log = None
            show_error(f"review not saved: {error_message(exc)}")

    def reviewed(self) -> set[str]:
        return set() if self.log is None else set(self.log.reviewed)

    def show_case(self, case_id: str | None) -> None:
        """The case shown now (its mark on the button)."""
        self.case = case_id
        done = self.log is not None and case_id is not None and self.log.is_reviewed(case_id)
        self.mark_button.setEnabled(self.log is not None and case_id is not None)
        self.mark_button.setChecked(done)
        self.mark_button.setText(UNMARK if done else MARK)

    def show_risk(self, risk: Any, structure: str, has_risk: bool = True) -> None:
        """List the flagged slices of ``risk`` (``structure``'s ``StructureRisk``, or None)."""
        self.flagged.clear()
        if risk is None:
            self.title.setText(
                ""
                if has_risk
                else "This run has no risk estimates (written before they were): "
                "no flagged slices; re-run segeval evaluate to rank it by risk."
            )
            self.flagged.setVisible(False)
            return
        shown = list(risk.flagged)
        if shown:
            self.title.setText(
                f"Flagged slices of {structure} (structure risk {risk.risk:.2f}), riskiest "
                "first (click: go there):"
            )
        else:
            shown = sorted(risk.slices, key=lambda s: -s.risk)[:1]
            self.title.setText(
                f"No flagged slice of {structure} (structure risk {risk.risk:.2f}); its "
                "riskiest slice:"
            )
        for s in shown:
            item = QListWidgetItem(flagged_text(s))
            item.setData(SLICE_ROLE, int(s.slice))
            self.flagged.addItem(item)
        self.flagged.setCurrentRow(0)  # the slice a case opens on
        self.flagged.setVisible(bool(shown))

    def _mark_clicked(self, checked: bool) -> None:
        case = self.case
        if case is not None:
            run_guarded("review", lambda: self.mark(case, checked))
        self.show_case(self.case)  # the button tells what is saved

    def mark(self, case_id: str, reviewed: bool = True) -> None:
        """Mark ``case_id`` reviewed (or not) in ``review.json`` and show it."""
        if self.log is None:
            raise ValueError("no results folder with a readable review.json is open")
        self.log.mark(case_id, reviewed)
        self.show_case(self.case)
        self.reviewed_changed.emit(case_id, reviewed)
