"""Step through the correction rounds of an ``interactive`` run (mask prompts listed, not drawn)."""

from __future__ import annotations

import math
from typing import Any, cast

from qtpy.QtCore import QSignalBlocker
from qtpy.QtGui import QColor
from qtpy.QtWidgets import QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QWidget

from napari_segeval._names import CLEAN
from napari_segeval._widgets import colours
from napari_segeval._widgets._form import hbox, text_line, vbox
from napari_segeval._widgets.colours import NEGATIVE_COLOUR as NEGATIVE
from napari_segeval._widgets.colours import POSITIVE_COLOUR as POSITIVE
from napari_segeval._widgets.jobs.worker import button
from napari_segeval._widgets.prompt.layers import POINT_PX_MAX, POINT_PX_MIN
from napari_segeval._widgets.results.layers import prediction_role
from napari_segeval._widgets.results.table import rows_table, selected_row
from napari_segeval.metrics.catalog import METRICS

DICE = METRICS["dice"]

#: Box prompts are white in every view (the colour language's prompt colour).
BOX = colours.PROMPT_COLOUR
#: Point size (a fraction of the image's larger side, as the Prompt tab's points) and box
#: edge width of the prompts added in the round shown, then of the earlier ones.
ADDED, EARLIER = (1 / 25, 3.0), (1 / 40, 1.5)
FELL = QColor(200, 40, 40)


def round_rows(rounds: list) -> list[tuple[str, str, str, str, bool]]:
    """``(round, Dice, change, prompt added, fell)`` text of each round for the table."""
    out, before = [], math.nan
    for r in rounds:
        delta = r.dice - before
        fell = DICE.worse(delta, 0.0)
        change = "" if math.isnan(delta) else f"{'▼ ' if fell else ''}{DICE.text(delta, True)}"
        out.append((str(r.round), DICE.text(r.dice), change, r.change, fell))
        before = r.dice
    return out


def prompt_layer_data(rnd: Any, ndim: int) -> tuple[list, list, list, list]:
    """``(points, point looks, boxes, box looks)`` of a round's prompts in layer coordinates; a
    look is ``(colour, size or edge width)``, larger for the round's added prompts."""
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.prompt_set import Point

    first_added = len(rnd.prompts) - len(rnd.added)
    points, point_looks, boxes, box_looks = [], [], [], []
    for i, p in enumerate(rnd.prompts):
        size, width = ADDED if i >= first_added else EARLIER
        if isinstance(p, Point):
            points.append(p.to_napari(ndim))
            point_looks.append((POSITIVE if p.positive else NEGATIVE, size))
        elif isinstance(p, Box):
            boxes.append(p.to_napari(ndim))
            box_looks.append((BOX, width))
    return points, point_looks, boxes, box_looks


class RoundStepper(QWidget):
    """The rounds of one structure of one case, and the layers that show one round."""

    def __init__(self, panel: Any) -> None:
        super().__init__()
        self.panel, self.viewer, self.case_layers = panel, panel.viewer, panel.layers
        self.rounds: list = []
        self.current: int | None = None
        self.wanted: str | None = None  # the round the Dice tab is to compare
        self.prompt_layers: dict[str, Any] = {}
        self.title = QLabel("Correction rounds")
        self.table = QTableWidget(0, 4)
        rows_table(self.table).setHorizontalHeaderLabels(
            ["round", DICE.header, "change", "prompt added"]
        )
        self._header(True).setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._picked)
        self.previous_button = button("◀ Round", "", lambda: self.step(-1), "round")
        self.next_button = button("Round ▶", "", lambda: self.step(1), "round")
        self.status = text_line()
        steps = hbox(self.previous_button, self.next_button)
        vbox(self, self.title, self.table, steps, self.status, tight=True)
        self.setVisible(False)

    def show_row(self, folder: Any, row: dict, label: int | None, image: Any) -> None:
        """The rounds of a selected row, at its round; ``image`` places the prompts."""
        if not folder.has_rounds or label is None or image is None:
            self.reset()
            return
        key = row["key"]  # its round 0 names it: "clean", "pgd @ threshold" ...
        self.rounds = list(folder.rounds(row["case"], label, key.condition, key.model))
        self.image, self.case = image, row["case"]
        self.title.setText(
            f"Correction rounds of {self.case}: {row['structure']} ({key.first_round()})"
        )
        with QSignalBlocker(self.table):
            self.table.setRowCount(len(self.rounds))
            for i, cells in enumerate(round_rows(self.rounds)):
                for j, text in enumerate(cells[:4]):
                    item = QTableWidgetItem(text)
                    if cells[4] and j in (1, 2):
                        item.setForeground(FELL)
                    self.table.setItem(i, j, item)
            self.table.resizeColumnsToContents()
            shown = min(len(self.rounds), 7)  # every round in view, up to 7
            self.table.setFixedHeight(
                self._header(True).height() + 4 + shown * self._header(False).defaultSectionSize()
            )
        self.setVisible(bool(self.rounds))
        if not self.rounds:
            self.clear()
            return
        known = [r.round for r in self.rounds]
        self.show_round(known.index(key.round) if key.round in known else 0, move=False)

    def step(self, by: int) -> None:
        """Show the next (``by=1``) or previous (-1) round; the view follows its prompt."""
        if self.current is not None and 0 <= self.current + by < len(self.rounds):
            self.show_round(self.current + by, move=True)

    def _header(self, horizontal: bool) -> QHeaderView:
        header = self.table.horizontalHeader() if horizontal else self.table.verticalHeader()
        return cast(QHeaderView, header)

    def _picked(self) -> None:
        row = selected_row(self.table)
        if row is not None and row != self.current:
            self.show_round(row, move=True)

    def show_round(self, i: int, move: bool = True) -> None:
        """Show round number ``i`` of the list: prediction, prompts, Dice (module docstring)."""
        rnd = self.rounds[i]
        self.current = i
        role = prediction_role(str(rnd.key))
        if role in self.case_layers.layers:
            self.case_layers.show_prediction(role)
        self._draw(rnd)
        with QSignalBlocker(self.table):
            self.table.selectRow(i)
        self.previous_button.setEnabled(i > 0)
        self.next_button.setEnabled(i < len(self.rounds) - 1)
        _, dice, change, added, fell = round_rows(self.rounds)[i]
        since = f" ({change} since round {self.rounds[i - 1].round})" if change else ""
        self.status.setText(
            f"Round {rnd.round} of {self.rounds[-1].round}: Dice {dice}{since}"
            f"{', it fell' if fell else ''}. Added: {added}."
        )
        if move and rnd.added:
            self.panel._dice().dice.go_to_slice(int(rnd.added[0].index))
        self._compare(str(rnd.key))

    def _compare(self, key: str) -> None:
        """The Dice tab compares round 0 with round ``key`` (counted in the worker)."""
        from napari_segeval._widgets.results.tasks import pair_job

        self.wanted = key  # a count of a round stepped past is dropped when it arrives
        loaded, image = self.panel.loaded, self.case_layers.layers.get("image")
        if loaded is None or key in loaded.pair or key not in loaded.predictions:
            return
        needs = [image] if image is not None else []
        self.panel.runner.start_next(
            f"counting {key}", pair_job, loaded, key, on_done=self._compared, needs=needs
        )

    def _compared(self, result: tuple) -> None:
        from dataclasses import replace

        loaded, key, counted = result
        shown, layers = self.panel.loaded, self.case_layers.layers
        if (
            key != self.wanted
            or shown is None
            or shown.case is not loaded.case
            or prediction_role(key) not in layers
        ):
            return  # another round, case or folder since
        self.panel.loaded = replace(shown, pair=(shown.pair[0], key))
        state = self.panel.state
        pair = (shown.pair[0] or CLEAN, key)
        self.panel.point_state(pair, state.current, counted, state.attacked_image)

    def _draw(self, rnd: Any) -> None:
        """Replace the prompt layers by the prompts given up to ``rnd``."""
        import numpy as np

        ndim = int(self.image.ndim)
        points, looks, boxes, edges = prompt_layer_data(rnd, ndim)
        place = {"scale": self.image.scale, "translate": self.image.translate, "ndim": ndim}
        self.clear()
        with self.viewer.layers.batched_update():
            self.prompt_layers["boxes"] = self.viewer.add_shapes(
                boxes or None,
                shape_type="rectangle",
                face_color="transparent",
                edge_color=[c for c, _ in edges] or BOX,
                edge_width=[w for _, w in edges] or 1.0,
                name=f"{self.case} boxes",
                **place,
            )
            shape = self.image.data.shape  # an RGB image: the plane before its colours
            side = max(shape[-2:] if ndim == len(shape) else shape[-3:-1])
            self.prompt_layers["points"] = self.viewer.add_points(
                np.asarray(points, float).reshape(-1, ndim),
                border_color="white",
                border_width=0.15,
                face_color=[c for c, _ in looks] or POSITIVE,
                size=[z * side for _, z in looks] or side * EARLIER[0],
                canvas_size_limits=(POINT_PX_MIN, 1.5 * POINT_PX_MAX),
                name=f"{self.case} prompts",
                **place,
            )
        self.viewer.layers.selection.active = self.image

    def clear(self) -> None:
        """Remove the prompt layers (another case, or another folder)."""
        for layer in self.prompt_layers.values():
            if layer in self.viewer.layers:
                self.viewer.layers.remove(layer)
        self.prompt_layers = {}

    def reset(self) -> None:
        """Forget the rounds shown (a new folder, or a row of another protocol)."""
        self.rounds, self.current = [], None
        self.clear()
        self.setVisible(False)
