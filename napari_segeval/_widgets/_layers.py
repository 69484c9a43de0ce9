"""Choose which layers form the case: image, reference, clean and attacked predictions."""

from __future__ import annotations

from typing import Any

from qtpy.QtWidgets import QComboBox, QFormLayout, QWidget

from napari_segeval._widgets._state import CONDITIONS, ViewerState

NONE = "(none)"
ROLES = ("image", "reference", *CONDITIONS)


class LayerPicker(QWidget):
    """Four combo boxes bound to a :class:`ViewerState`, following the viewer's layer list."""

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        super().__init__()
        self.viewer = viewer
        self.state = state
        self.combos = {role: QComboBox() for role in ROLES}
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        for role, combo in self.combos.items():
            form.addRow(role, combo)
            combo.currentTextChanged.connect(lambda text, role=role: self._picked(role, text))
        for event in (viewer.layers.events.inserted, viewer.layers.events.removed):
            event.connect(self._refill)
        state.subscribe(self._on_state)
        self._guess()
        self._refill()

    def _layer_type(self, role: str) -> str:
        return "image" if role == "image" else "labels"

    def _guess(self) -> None:
        """Pick an image and a reference (a Labels layer with structure names) if unset."""
        layers = list(self.viewer.layers)
        if self.state.image is None:
            images = [ly for ly in layers if ly._type_string == "image"]
            if images:
                self.state.set_image(images[0])
        if self.state.reference is None:
            labels = [ly for ly in layers if ly._type_string == "labels"]
            named = [ly for ly in labels if (ly.metadata or {}).get("structures")]
            refs = named or [ly for ly in labels if "reference" in ly.name.lower()]
            if refs:
                self.state.set_reference(refs[0])

    def _current(self, role: str) -> Any:
        if role == "image":
            return self.state.image
        if role == "reference":
            return self.state.reference
        return self.state.predictions.get(role)

    def _refill(self, event: Any = None) -> None:
        for role, combo in self.combos.items():
            kind = self._layer_type(role)
            names = [ly.name for ly in self.viewer.layers if ly._type_string == kind]
            combo.blockSignals(True)
            combo.clear()
            combo.addItems([NONE, *names])
            layer = self._current(role)
            if layer is not None and layer in self.viewer.layers:
                combo.setCurrentText(layer.name)
            else:
                combo.setCurrentText(NONE)
                if layer is not None:  # the chosen layer was deleted
                    combo.blockSignals(False)
                    self._picked(role, NONE)
                    continue
            combo.blockSignals(False)

    def _picked(self, role: str, name: str) -> None:
        layer = self.viewer.layers[name] if name in self.viewer.layers else None
        if role == "image":
            self.state.set_image(layer)
        elif role == "reference":
            self.state.set_reference(layer)
        else:
            self.state.set_prediction(role, layer)

    def _on_state(self, what: str) -> None:
        if what in ROLES:
            self._refill()
