"""The *Case* dock panel: which image and reference layers form the case, and their geometry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from qtpy.QtWidgets import QComboBox, QFormLayout, QLabel, QVBoxLayout, QWidget

if TYPE_CHECKING:  # pragma: no cover
    import napari


def describe_layer(layer) -> dict[str, str]:
    """Text fields describing a layer's geometry as read by napari-segeval.

    Parameters
    ----------
    layer : napari.layers.Layer or None
        A layer opened by our reader (metadata carries geometry) or any layer.

    Returns
    -------
    dict of str to str
        ``modality``, ``axes``, ``shape``, ``spacing``, ``structures``.
    """
    if layer is None:
        return {k: "-" for k in ("modality", "axes", "shape", "spacing", "structures")}
    meta = dict(getattr(layer, "metadata", {}) or {})
    geometry = meta.get("geometry") or {}
    spacing = geometry.get("spacing") or tuple(float(s) for s in layer.scale)
    structures = meta.get("structures") or {}
    names = ", ".join(f"{k}: {v}" for k, v in sorted(structures.items(), key=lambda kv: int(kv[0])))
    return {
        "modality": str(meta.get("modality", "unknown")),
        "axes": str(meta.get("axes", "-")),
        "shape": " x ".join(str(s) for s in layer.data.shape),
        "spacing": " x ".join(f"{float(s):g}" for s in spacing) + " mm",
        "structures": names or "-",
    }


class CaseWidget(QWidget):
    """Pick the image and reference-label layers of the case and show their geometry."""

    def __init__(self, napari_viewer: napari.viewer.Viewer) -> None:
        super().__init__()
        self.viewer = napari_viewer
        self.image_combo = QComboBox()
        self.labels_combo = QComboBox()
        self.fields = {k: QLabel("-") for k in ("modality", "axes", "shape", "spacing",
                                                  "structures")}
        self.fields["structures"].setWordWrap(True)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        form = QFormLayout()
        form.addRow("image", self.image_combo)
        form.addRow("reference", self.labels_combo)
        for key, label in self.fields.items():
            form.addRow(key, label)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.status)
        layout.addStretch(1)
        self.image_combo.currentTextChanged.connect(self._refresh_fields)
        self.labels_combo.currentTextChanged.connect(self._refresh_fields)
        for event in (self.viewer.layers.events.inserted, self.viewer.layers.events.removed):
            event.connect(self._refresh_layers)
        self._refresh_layers()

    def _layers_of(self, kind: str) -> list[str]:
        return [layer.name for layer in self.viewer.layers if layer._type_string == kind]

    def _refresh_layers(self, event=None) -> None:
        for combo, kind in ((self.image_combo, "image"), (self.labels_combo, "labels")):
            current = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            names = self._layers_of(kind)
            combo.addItems(names if kind == "image" else ["(none)"] + names)
            if current in names:
                combo.setCurrentText(current)
            combo.blockSignals(False)
        self._refresh_fields()

    def image_layer(self):
        """The chosen image layer, or None."""
        name = self.image_combo.currentText()
        return self.viewer.layers[name] if name in self.viewer.layers else None

    def labels_layer(self):
        """The chosen reference Labels layer, or None."""
        name = self.labels_combo.currentText()
        return self.viewer.layers[name] if name in self.viewer.layers else None

    def _refresh_fields(self, *_) -> None:
        image, labels = self.image_layer(), self.labels_layer()
        info = describe_layer(image)
        if labels is not None:
            info["structures"] = describe_layer(labels)["structures"]
        for key, value in info.items():
            self.fields[key].setText(value)
        self.status.setText(self._grid_status(image, labels))

    @staticmethod
    def _grid_status(image, labels) -> str:
        if image is None or labels is None:
            return ""
        img_shape = image.data.shape[:-1] if image.rgb else image.data.shape
        if tuple(img_shape) != tuple(labels.data.shape):
            return f"reference shape {labels.data.shape} differs from image shape {img_shape}"
        if any(abs(a - b) > 1e-6 for a, b in zip(image.scale[-labels.ndim:], labels.scale)):
            return "reference spacing differs from image spacing"
        return "reference lines up with the image"
