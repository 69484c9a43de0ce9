"""The Prompt tab's prompt tools: boxes, positive and negative clicks, the prompt list."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from qtpy.QtWidgets import QCheckBox, QFileDialog, QListWidget, QWidget

from napari_segeval._widgets._form import confirm_replace, hbox, text_line, vbox
from napari_segeval._widgets._state import ViewerState, go_to_index, listen
from napari_segeval._widgets.jobs.worker import button, run_guarded
from napari_segeval._widgets.prompt.layers import PromptLayers
from napari_segeval.prompts.prompt_file import PromptFile
from napari_segeval.prompts.prompt_set import PromptSet, describe

PROMPTS_FILTER = "Prompts (*.prompts.json *.json)"
#: The point tools and their tooltips.
POINT_TIPS = {
    "positive": "click where the structure is (positive click)",
    "negative": "click where the structure is not (negative click)",
}


def case_key(state: Any) -> tuple | None:
    """What identifies the case of the prompts: its image layer and array (None without)."""
    layer = state.image
    return None if layer is None else (id(layer), id(layer.data))


class PromptTools(QWidget):
    """Prompt tools of the selected structure; ``repropagate(auto)`` runs the panel's job."""

    def __init__(
        self, napari_viewer: Any, state: ViewerState, repropagate: Callable[[bool], Any]
    ) -> None:
        super().__init__()
        self.viewer, self.state, self.repropagate = napari_viewer, state, repropagate
        self.layers = PromptLayers(napari_viewer, state, self._changed)
        self._case = case_key(state)
        self._shown: list = []
        buttons = {
            "middle": (
                "Go to middle slice",
                self.go_to_middle,
                "the middle slice of the structure's reference extent",
            ),
            "reference": (
                "Box from reference",
                self.box_from_reference,
                (
                    "start the structure over from the reference's box on its middle "
                    "slice (first frame of a video)"
                ),
            ),
            "box": ("Box", self.start_box, "draw a box for the structure on the slice shown"),
            "positive": ("+ point", lambda: self.start_points(True), POINT_TIPS["positive"]),
            "negative": ("− point", lambda: self.start_points(False), POINT_TIPS["negative"]),
            "delete": ("Delete", self.delete_selected, "delete the prompt selected in the list"),
            "undo": ("Undo", self.undo, "remove the structure's last prompt"),
            "save": ("Save prompts…", self._ask_save, "write the case's prompts as JSON"),
            "load": ("Load prompts…", self._ask_load, "replace the prompts by a prompts file's"),
            "repropagate": (
                "Re-propagate",
                lambda: self.repropagate(False),
                (
                    "propagate again the structures whose prompts changed (the "
                    "others keep their result; the image is not encoded again)"
                ),
            ),
        }
        self.buttons = {
            key: button(text, tip, action) for key, (text, action, tip) in buttons.items()
        }
        self.auto = QCheckBox("after each prompt")
        self.auto.setToolTip("re-propagate as soon as a prompt is added, deleted or undone")
        self.info, self.reason = text_line(), text_line()
        for label in (self.info, self.reason):
            label.setVisible(False)
        self.reason.setStyleSheet("color: #e8a33d")
        self.status = text_line()
        self.list = QListWidget()
        self.list.setMinimumHeight(60)
        self.list.setMaximumHeight(110)  # about five prompts; it scrolls beyond
        self.list.itemClicked.connect(lambda _item: run_guarded("go to prompt", self.show_prompt))
        self._build()
        ev = self.state.events
        self._unlisten = listen(
            [(ev.all, self._on_state)]
            + [(signal, self._follow) for signal in (ev.reference, ev.current, ev.image)]
        )
        self.refresh()

    def _build(self) -> None:
        rows: tuple[tuple[str | QWidget, ...], ...] = (
            (self.info,),
            (self.reason,),
            ("middle", "reference"),
            ("box", "positive", "negative"),
            (self.list,),
            ("delete", "undo", "save", "load"),
            ("repropagate", self.auto),
            (self.status,),
        )
        widgets = ([self.buttons[k] if isinstance(k, str) else k for k in keys] for keys in rows)
        stretch = self.buttons["repropagate"]
        vbox(self, *(hbox(*w, stretch=stretch) for w in widgets), tight=True)

    def _on_state(self) -> None:
        """Any change of the state: another case forgets the prompts."""
        key = case_key(self.state)
        if key is not None and key != self._case:  # another case: its prompts do not fit
            self._case = key
            self.layers.forget()

    def _follow(self) -> None:
        self._on_state()  # first, whichever psygnal calls first
        self.layers.follow_structure()
        self.refresh()

    def _changed(self) -> None:
        """The prompts changed (drawn, moved or deleted in napari, or by the panel)."""
        self.refresh()
        if self.auto.isChecked():
            run_guarded("re-propagation", lambda: self.repropagate(True))

    def refresh(self) -> None:
        self.list.clear()
        self._shown = []
        label = self.state.current
        if label is None or self.state.image is None:
            return
        try:
            where = self.layers.where()
            self._shown = self.layers.items(label)
        except ValueError:  # no image, or a series: the buttons say why when used
            return
        for i, item in enumerate(self._shown, 1):
            self.list.addItem(f"{i}. {describe(item.prompt, where)}")

    def set_capability(self, capability: Any) -> None:
        """Enable what the chosen model takes (a ``Capability``); say why not otherwise."""
        prompts = capability.prompts
        points = prompts and capability.points is not False
        for key, b in self.buttons.items():
            b.setEnabled(prompts and (points or key not in POINT_TIPS))
        self.auto.setEnabled(prompts)
        for key, tip in POINT_TIPS.items():
            if not points:
                tip = capability.reason
            elif capability.points is None:
                tip += " (whether the model takes points is known once it is loaded)"
            self.buttons[key].setToolTip(tip)
        self.reason.setText(capability.reason)
        self.reason.setVisible(bool(capability.reason))

    def note(self, text: str) -> None:
        """Show a line about the prompts above the tools (empty: none)."""
        self.info.setText(text)
        self.info.setVisible(bool(text))

    def _need_structure(self) -> int:
        if self.state.current is None:
            raise ValueError("choose a structure first")
        problem = self.layers.plane_problem()
        if problem:
            raise ValueError(problem)
        return int(self.state.current)

    def start_box(self) -> Any:
        """Select the boxes layer in rectangle mode for the selected structure."""
        return self._draw(None, f"drawing boxes for {{}}: drag on the {self.layers.where()}")

    def start_points(self, positive: bool = True) -> Any:
        """Select the points layer in add mode: positive or negative clicks."""
        kind = "positive (+)" if positive else "negative (−)"
        return self._draw(positive, f"adding {kind} clicks for {{}}: click on the image")

    def _draw(self, positive: bool | None, status: str) -> Any:
        """Select the boxes (``positive`` None) or points layer to draw in napari."""
        name = self._name()
        layer = self.layers.boxes() if positive is None else self.layers.points()
        self.layers.follow_structure(positive)
        self.viewer.layers.selection.active = layer
        layer.mode = "add_rectangle" if positive is None else "add"
        self.status.setText(status.format(name))
        return layer

    def _name(self) -> str:
        label = self._need_structure()
        return f"{label} {self.state.structures.get(label, '')}".strip()

    def go_to_middle(self) -> int:
        """Show the middle slice of the selected structure's reference extent."""
        from napari_segeval._widgets.overlays.arrays import focus_slice

        n = self.layers.frame_shape()[0]
        ref = self.state.reference
        index = focus_slice(None if ref is None else ref.data, self.state.current, n)
        go_to_index(self.viewer, self.layers.grid_layer(), index)
        return index

    def set_box(self, box: Any) -> None:
        """Start structure ``box.label`` over from ``box`` (its other prompts go)."""
        self.layers.replace({box.label: PromptSet.from_box(box)}, [box.label])
        self._changed()

    def box_from_reference(self) -> Any:
        """Box of the selected structure on its middle reference slice (or first frame)."""
        from napari_segeval.prompts import box_from_labels

        ref = self.state.reference
        if ref is None or self.state.current is None:
            raise ValueError("choose a reference layer and a structure first")
        self.layers.frame_shape()  # refuses a series
        mode = "video" if self.state.kind() == "video" else "volume"
        box = box_from_labels(ref.data, int(self.state.current), mode=mode)
        self.set_box(box)
        go_to_index(self.viewer, self.layers.grid_layer(), box.index)
        return box

    def prompts(self) -> dict[int, PromptSet]:
        """Every structure's prompt set, as drawn (refused when there is none)."""
        sets = self.layers.sets()
        if not sets:
            raise ValueError(
                "no prompt yet: draw a box or take it from the reference "
                "(Box from reference), or click a positive point"
            )
        return sets

    def show_prompt(self) -> None:
        row = self.list.currentRow()
        if 0 <= row < len(self._shown):
            go_to_index(self.viewer, self.layers.grid_layer(), self._shown[row].prompt.index)

    def delete_selected(self) -> None:
        row = self.list.currentRow()
        if not 0 <= row < len(self._shown):
            raise ValueError("select a prompt in the list first")
        self.layers.remove([self._shown[row]])
        self._changed()

    def undo(self) -> None:
        items = self.layers.items(self._need_structure())
        if not items:
            raise ValueError(f"{self._name()} has no prompt to undo")
        self.layers.remove([items[-1]])
        self._changed()

    def start_over(self, sets: dict[int, PromptSet]) -> None:
        """Replace every prompt by ``sets`` (a correction's starting prompts)."""
        self.layers.replace(sets)
        self.refresh()

    def prompt_file(self) -> PromptFile:
        """The case's prompts with the frame-stack shape and the structure names."""
        sets = self.prompts()
        names = {lab: self.state.structures[lab] for lab in sets if lab in self.state.structures}
        return PromptFile(sets, self.layers.frame_shape(), names)

    def save_prompts(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the case's prompts to ``path`` (never over a file unless ``overwrite``)."""
        from napari_segeval.prompts.prompt_file import write_prompts

        out = write_prompts(path, self.prompt_file(), overwrite=overwrite)
        self.status.setText(f"saved the prompts to {out}")
        return out

    def load_prompts(self, path: str | Path) -> PromptFile:
        """Replace the prompts by those of ``path``, checked against this case first."""
        from napari_segeval.prompts.prompt_file import read_prompts

        pf = read_prompts(path)
        pf.check(
            self.layers.frame_shape(),
            self.state.structures or None,
            where=self.layers.where(),
            source=str(path),
        )
        self.layers.replace(pf.sets)
        self.status.setText(
            f"loaded {sum(len(s) for s in pf.sets.values())} prompts of "
            f"{len(pf.sets)} structures from {path}"
        )
        self._changed()
        return pf

    def _ask_save(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Save prompts",
            "",
            PROMPTS_FILTER,
            options=QFileDialog.Option.DontConfirmOverwrite,
        )
        if not path:
            return
        exists = Path(path).exists()
        if exists and not confirm_replace(self, path):
            return
        self.save_prompts(path, overwrite=exists)

    def _ask_load(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load prompts", "", PROMPTS_FILTER)
        if path:
            self.load_prompts(path)

    def closeEvent(self, event) -> None:
        self._unlisten()
        super().closeEvent(event)
