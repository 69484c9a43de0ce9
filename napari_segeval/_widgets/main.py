"""The main napari-segeval dock widget: layer choice and its panels on tabs."""

from __future__ import annotations

from typing import Any

from qtpy.QtWidgets import QGroupBox, QTabWidget

from napari_segeval._widgets._form import vbox
from napari_segeval._widgets._layers import LayerPicker
from napari_segeval._widgets._state import Panel, ViewerState
from napari_segeval._widgets.compare.view import CompareBar
from napari_segeval._widgets.evaluate.attack import AttackPanel
from napari_segeval._widgets.evaluate.dice import DicePanel
from napari_segeval._widgets.evaluate.export import ExportPanel
from napari_segeval._widgets.evaluate.segment import SegmentPanel
from napari_segeval._widgets.jobs.worker import Outcome
from napari_segeval._widgets.prompt.panel import PromptPanel


class SegEvalWidget(Panel):
    """Layer picker above tabs: Dice, Segment, Prompt & propagate, Attack, Export."""

    def __init__(self, napari_viewer: Any, state: ViewerState | None = None) -> None:
        super().__init__(napari_viewer, state)
        self.picker = LayerPicker(napari_viewer, self.state)
        self.dice = DicePanel(napari_viewer, self.state)
        self.segment = SegmentPanel(napari_viewer, self.state)
        self.prompt = PromptPanel(napari_viewer, self.state)
        self.attack = AttackPanel(napari_viewer, self.state)
        self.export = ExportPanel(napari_viewer, self.state, records=lambda: self.dice.records)
        box = QGroupBox("case layers")
        self.display = CompareBar(napari_viewer, self.state)
        vbox(box, self.picker, self.display)
        self.tabs = QTabWidget()
        for tab in ("dice", "segment", "prompt", "attack", "export"):
            self.tabs.addTab(getattr(self, tab), tab.capitalize())
        vbox(self, box).addWidget(self.tabs, 1)
        for panel in (self.segment, self.prompt, self.attack):
            panel.runner.job_done.connect(self._job_done)

    def _job_done(self, name: str, outcome: str) -> None:
        # a correction keeps the Prompt tab in front (its status line says how Dice moved)
        if outcome == Outcome.OK and name != "re-propagation":
            self.tabs.setCurrentWidget(self.dice)
            if name == "propagation":  # the result line goes where the person now looks
                self.dice.show_result(self.prompt.tools.status.text())
