"""The *Results* panel: browse a ``segeval evaluate`` folder, worst or riskiest cases first.

A selected row's case loads in a worker and replaces the previous case's layers in one step
(docs/batch.md, docs/reviewing.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from magicgui.widgets import CheckBox, ComboBox
from qtpy.QtCore import Qt
from qtpy.QtGui import QKeySequence
from qtpy.QtWidgets import QComboBox, QFileDialog, QShortcut, QTableView

from napari_segeval._names import CLEAN
from napari_segeval._widgets._form import form, hbox, text_line, vbox
from napari_segeval._widgets._state import Panel, ViewerState
from napari_segeval._widgets.jobs.worker import (
    JobRunner,
    button,
    run_guarded,
    show_error,
    show_info,
)
from napari_segeval._widgets.results.layers import CaseLayers, prediction_role
from napari_segeval._widgets.results.review import ReviewBox
from napari_segeval._widgets.results.rounds import RoundStepper
from napari_segeval._widgets.results.table import (
    ALL,
    ResultsModel,
    ResultsProxy,
    filter_text,
    rows_table,
    selected_row,
    selection,
)
from napari_segeval._widgets.results.tasks import Missing, focus_of, open_job, row_job, row_label
from napari_segeval.metrics.catalog import METRICS

if TYPE_CHECKING:
    from napari_segeval.evaluation.loaded import LoadedCase
    from napari_segeval.evaluation.results import ResultsFolder

NEXT_KEY, PREVIOUS_KEY = "Alt+Right", "Alt+Left"


class ResultsPanel(Panel):
    """Table of a results folder; a selected row's case (``loaded``) is shown in the viewer."""

    def __init__(self, napari_viewer: Any, state: ViewerState | None = None) -> None:
        super().__init__(napari_viewer, state)
        self.folder: ResultsFolder | None = None
        self.loaded: LoadedCase | None = None
        self.row: dict | None = None
        self.layers = CaseLayers(napari_viewer)
        self.evaluate: Any = None
        self._summary = ""
        self.model = ResultsModel()
        self.proxy = ResultsProxy()
        self.proxy.setSourceModel(self.model)
        self.table = rows_table(QTableView())
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setMinimumHeight(240)
        selection(self.table).selectionChanged.connect(self._selection_changed)
        self.filters = {
            k: ComboBox(label=k, choices=[ALL]) for k in ("structure", "condition", "fold")
        }
        for key, combo in self.filters.items():
            combo.changed.connect(lambda value, key=key: self.proxy.set_filter(key, value))
        self.show_absent = CheckBox(
            text="Show absences",
            value=True,
            tooltip="rows of a structure in neither the reference nor the "
            "prediction (no failure: listed after every real score)",
        )
        self.show_absent.changed.connect(self.proxy.set_show_absent)
        self.summary = text_line("Open a folder written by segeval evaluate.")
        self.open_button = button("Open…", "a folder written by segeval evaluate", self._ask_folder)
        self.locate_button = button(
            "Locate data folder…", "the data set moved: choose its new folder", self._ask_data_root
        )
        self.locate_button.setEnabled(False)
        self.previous_button = button(
            "◀ Previous case", f"previous case ({PREVIOUS_KEY})", lambda: self.step_case(-1)
        )
        self.next_button = button(
            "Next case ▶", f"next case ({NEXT_KEY})", lambda: self.step_case(1)
        )
        self.correction = QComboBox()
        self.save_button = button(
            "Save corrected…",
            "write the chosen layer with the source geometry to "
            "DIR/corrections/<case>/ (never overwrites)",
            self.save_correction,
            "save correction",
        )
        self.correct_button = button(
            "Correct with prompts",
            "correct the case shown in the Prompt tab: boxes and "
            "clicks on the failing slice, then re-propagate",
            self.correct,
            "correction",
        )
        self.rounds = RoundStepper(self)
        self.review = ReviewBox(self)
        self.review.slice_chosen.connect(self.go_to_slice)
        self.review.reviewed_changed.connect(lambda *_: self._show_reviewed())
        self.state.events.clean.connect(self._on_state)
        # loads take about a second: the panel's bar only
        self.runner = JobRunner(activity=False, viewer=napari_viewer)
        save = (self.correct_button, self.correction, self.save_button)
        vbox(
            self,
            hbox(self.open_button, self.locate_button),
            self.summary,
            form(*self.filters.values(), self.show_absent),
            self.table,
            self.review,
            self.rounds,
            hbox(self.previous_button, self.next_button),
            hbox(*save, stretch=self.correction),
            self.runner,
            stretch=self.table,
        )
        for key, step in ((NEXT_KEY, 1), (PREVIOUS_KEY, -1)):
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
            shortcut.activated.connect(lambda step=step: self.step_case(step))

    def _ask_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open a results folder")
        if path:
            self.open_folder(path)

    def open_folder(self, path: str | Path) -> None:
        """Open a results folder in a worker; a bad folder is a notification."""
        self.runner.start_next("opening results", open_job, str(path), on_done=self._opened)

    def _opened(self, folder: ResultsFolder) -> None:
        if self.layers.layers:
            self.state.set_case(None, None, {}, None)
        self.rounds.reset()
        self.layers.clear()
        self.folder, self.loaded, self.row = folder, None, None
        self.review.open(folder)
        done = self.review.reviewed()
        rows = [{**r, "reviewed": r["case"] in done} for r in folder.rows()]
        self.model.set_rows(rows)
        for key, combo in self.filters.items():
            values = sorted({filter_text(r, key) for r in rows}, key=lambda v: (v != CLEAN, v))
            with combo.changed.blocked():
                combo.choices = [ALL, *values]
                combo.value = ALL
            self.proxy.set_filter(key, ALL)
        self.filters["fold"].enabled = any(r.get("fold") is not None for r in rows)
        # worst first: by Dice, or by risk in a run without a reference (no Dice)
        key = "risk" if folder.has_risk and not folder.has_reference else "dice"
        up = METRICS[key].higher_is_better
        order = Qt.SortOrder.AscendingOrder if up else Qt.SortOrder.DescendingOrder
        self.table.sortByColumn(self.model.column(key), order)
        self.table.resizeColumnsToContents()
        absent = sum(1 for r in rows if r.get("absent"))
        self.show_absent.enabled = absent > 0
        notes = (
            (absent, f" ({absent} absences)"),
            (folder.failed, f", {len(folder.failed)} failed (see report.html)"),
            (True, f" — {folder.path}"),
            (
                folder.run.get("save_predictions") is False,
                " — predictions were not saved (--no-save-predictions)",
            ),
            (
                not folder.has_reference,
                " — no reference labels: no Dice; sorted by estimated risk, riskiest first",
            ),
            (not folder.has_risk, " — no risk: written before risks were estimated"),
        )
        self._summary = f"{folder.protocol}: {len(folder.cases())} cases, {len(rows)} rows"
        self._summary += "".join(text for shown, text in notes if shown)
        self._show_reviewed()
        self.locate_button.setEnabled(False)

    def _show_reviewed(self) -> None:
        """The table's *reviewed* column and the summary's count from the review log."""
        if self.folder is None:
            return
        done = self.review.reviewed()
        self.model.set_reviewed(done)
        cases = self.folder.cases()
        n = sum(1 for c in cases if c in done)
        self.summary.setText(f"{self._summary} — reviewed {n} of {len(cases)} cases")

    def _selection_changed(self, *_: Any) -> None:
        row = selected_row(self.table)
        if row is not None:
            self.select_row(row)

    def visible_rows(self) -> list[dict]:
        """The rows in the table's current order and filters."""
        return [self.proxy.row(i) for i in range(self.proxy.rowCount())]

    def select_row(self, proxy_row: int) -> None:
        """Show the case of a row of the table (loading it when it is not shown yet)."""
        if self.folder is None or not 0 <= proxy_row < self.proxy.rowCount():
            return
        if selected_row(self.table) != proxy_row:
            self.table.selectRow(proxy_row)  # calls back here through the selection
            return
        row = self.proxy.row(proxy_row)
        self.row = row
        focus, shown = focus_of(row), self.loaded
        if (
            shown is not None
            and shown.case_id == row["case"]
            and (focus is None or focus == shown.focus or focus in shown.pair)
        ):
            worst = "worst" if self.folder.has_reference else "riskiest"
            name = f"finding the {worst} slice of {row['structure']}"
            needs = [ly for r, ly in self.layers.layers.items() if r == "image"]
        else:
            name, shown, needs = f"loading {row['case']}", None, []
        self.runner.start_next(
            name, row_job, self.folder, row, shown, on_done=self._loaded, needs=needs
        )

    def step_case(self, step: int) -> None:
        """Select the first row of the next (``step=1``) or previous (-1) case in table order."""
        rows = self.visible_rows()
        if not rows:
            return
        order = list(dict.fromkeys(r["case"] for r in rows))
        current = self.row["case"] if self.row else None
        i = order.index(current) + step if current in order else 0
        if not 0 <= i < len(order):
            show_info("no next case" if step > 0 else "no previous case")
            return
        self.select_row([r["case"] for r in rows].index(order[i]))

    def _loaded(self, result: Missing | tuple) -> None:
        if isinstance(result, Missing):
            self.locate_button.setEnabled(result.error.data)
            show_error(str(result.error))
            return
        self.locate_button.setEnabled(False)
        row, loaded, specs, target, counted, risks = result
        if specs is not None:
            self._show(loaded, specs, row_label(loaded, row), counted)
        self._focus_row(row, target, risks)

    def _show(self, loaded: LoadedCase, specs: list, label: int | None, counted: dict) -> None:
        """Put a loaded case in the viewer (one main-thread step) and point the state at it."""

        def point_state(layers: dict | None) -> None:
            if layers is None:  # let go of the old layers: panels recount once, at the end
                self.state.set_case(None, None, {}, None)
            else:
                image = layers.get("perturbed") if loaded.pair[1] == loaded.focus else None
                self.point_state(loaded.pair, label, counted, image)

        self._dice()  # the Evaluate panel exists before the state changes
        self.layers.swap(specs, loaded.case.modality, point_state)
        self.loaded = loaded
        self.correction.clear()
        self.correction.addItems(
            [r for r in self.layers.layers if r == "reference" or self.layers.is_prediction(r)]
        )

    def point_state(
        self, pair: tuple, label: int | None, counted: dict, attacked_image: Any
    ) -> None:
        """Point the state at the layers shown, ``pair``'s predictions (keys, or None) compared."""
        layers = self.layers.layers
        first, second = (layers.get(prediction_role(k)) if k else None for k in pair)
        self.state.set_case(
            layers["image"],
            layers.get("reference"),
            {CLEAN: first, "attacked": second},
            label,
            counted=counted,
            attacked_image=attacked_image,
        )

    def _focus_row(self, row: dict, target: int | None, risks: dict | None = None) -> None:
        """Show the row's prediction, structure, risks and flagged slices; go to ``target``."""
        if self.folder is None or self.loaded is None or row["case"] != self.loaded.case_id:
            return
        self.layers.show_prediction(prediction_role(str(row["key"])))
        label = row_label(self.loaded, row)
        if label is not None:
            self.state.set_current(label)
        evaluate = self._dice()
        self.state.set_risk(risks or {})
        self.review.show_case(row["case"])
        risk = (risks or {}).get(label) if label is not None else None
        self.review.show_risk(risk, row["structure"], self.folder.has_risk)
        evaluate.tabs.setCurrentWidget(evaluate.dice)
        labels = [r["label"] for r in evaluate.dice.records]
        if label in labels:  # the structure's row in view in the Dice table
            evaluate.dice.table.scrollToItem(evaluate.dice.table.item(labels.index(label), 0))
        if target is not None:
            evaluate.dice.go_to_slice(target)
        self.rounds.show_row(self.folder, row, label, self.layers.layers.get("image"))

    def go_to_slice(self, index: int) -> None:
        """Show slice ``index`` of the case shown (a flagged slice clicked)."""
        if self.loaded is not None:
            self._dice().dice.go_to_slice(int(index))

    def _dice(self) -> Any:
        """The Evaluate panel of this viewer (docked when not open yet)."""
        if self.evaluate is not None:
            return self.evaluate
        try:
            _, widget = self.viewer.window.add_plugin_dock_widget("napari-segeval", "Evaluate")
        except Exception:  # noqa: BLE001 - plugin not registered (a script or a test)
            from napari_segeval._widgets.main import SegEvalWidget

            widget = SegEvalWidget(self.viewer, self.state)
            self.viewer.window.add_dock_widget(widget, name="Evaluate", area="right")
        self.evaluate = widget
        return widget

    def _ask_data_root(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Where is the data set now?")
        if path:
            run_guarded("locate data folder", lambda: self.remap_data(path))

    def remap_data(self, path: str | Path) -> None:
        """Read data-set files from ``path`` (a moved data set) and reload the selected row."""
        if self.folder is None:
            return
        self.folder.remap_data(path)
        self.loaded = None
        self._selection_changed()

    def correct(self) -> None:
        """Correct the case shown with prompts in the Prompt tab (module docstring)."""
        from napari_segeval._widgets.results.correct import open_correction

        if self.folder is None or self.loaded is None:
            raise ValueError("select a row first: no case is shown")
        open_correction(self.folder, self.loaded, self._dice())

    def _on_state(self) -> None:
        """A correction of the case shown becomes one of its layers (*Save corrected…*)."""
        layer, shown = self.state.predictions.get(CLEAN), self.loaded
        if layer is None or shown is None or layer.metadata.get("correction_of") != shown.case_id:
            return
        self.layers.layers["corrected"] = layer
        self.layers.show_prediction("corrected")  # the saved one under it would blur it
        if self.correction.findText("corrected") < 0:
            self.correction.addItem("corrected")
        self.correction.setCurrentText("corrected")

    def save_correction(self) -> Path | None:
        """Write the chosen layer (and its prompts) to ``DIR/corrections/<case>/``."""
        import numpy as np

        from napari_segeval.prompts.prompt_file import PromptFile

        role = self.correction.currentText()
        layer = self.layers.layers.get(role)
        if self.folder is None or self.loaded is None or layer is None:
            raise ValueError("select a row first: no case is shown")
        name = "reference" if role == "reference" else role.removeprefix("attacked:")
        prompts = layer.metadata.get("prompts")
        prompts = None if prompts is None else PromptFile.from_json(prompts)
        path = self.folder.save_correction(self.loaded, name, np.asarray(layer.data), prompts)
        show_info(
            f"saved {role} of {self.loaded.case_id} to {path}"
            + (" with its prompts" if prompts is not None else "")
        )
        return path

    def closeEvent(self, event) -> None:
        self.state.events.clean.disconnect(self._on_state)
        if self.runner.running:
            self.runner.cancel()
        super().closeEvent(event)
