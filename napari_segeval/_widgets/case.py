"""The *Case* dock panel: the case's image and reference layers, their geometry, the display."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from magicgui.widgets import ComboBox
from qtpy.QtWidgets import QFormLayout, QLabel

from napari_segeval._widgets._form import text_line, vbox
from napari_segeval._widgets._layers import LayerPicker
from napari_segeval._widgets._state import Panel, ViewerState
from napari_segeval._widgets.colours import ColourLanguage
from napari_segeval._widgets.display import DisplayPreset, presets_for
from napari_segeval._widgets.jobs.worker import run_guarded

if TYPE_CHECKING:  # pragma: no cover
    import napari

FIELDS = ("modality", "axes", "shape", "spacing", "structures")


def describe_layer(layer) -> dict[str, str]:
    """``modality``, ``axes``, ``shape``, ``spacing`` and ``structures`` of a layer, as text."""
    if layer is None:
        return dict.fromkeys(FIELDS, "-")
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


class CaseWidget(Panel):
    """Pick the image and reference layers of the case, show their geometry and whether they
    line up; ``display``: the image modality's display presets (a new image: the first)."""

    def __init__(
        self, napari_viewer: napari.viewer.Viewer, state: ViewerState | None = None
    ) -> None:
        super().__init__(napari_viewer, state)
        self.picker = LayerPicker(napari_viewer, self.state, roles=("image", "reference"))
        self.fields = {k: QLabel("-") for k in FIELDS}
        self.fields["structures"].setWordWrap(True)
        self.status = text_line()
        self.display = ComboBox(
            label="display",
            choices=[],
            tooltip="what you see of the image (its contrast limits): CT windows W/L in HU, "
            "percentiles of the non-zero voxels for MR and others; the model's input "
            "is set apart, in the Prompt tab",
        )
        self.display.changed.connect(self._display_picked)
        #: the display presets listed for the chosen image
        self.presets: tuple[DisplayPreset, ...] = ()
        self._shown_image: Any = None
        rows = QFormLayout()  # not form(): a wrapped line needs the layout's height-for-width
        for key, label in self.fields.items():
            rows.addRow(key, label)
        rows.addRow(self.display.label, self.display.native)
        vbox(self, self.picker, rows, self.status, 1)
        self.colours = ColourLanguage(napari_viewer, self.state)
        self.state.events.image.connect(self._on_state)
        self.state.events.reference.connect(self._on_state)
        self._on_state()

    def _on_state(self) -> None:
        self._refresh_fields()
        self._fill_display()

    def _fill_display(self) -> None:
        """List the presets of the image's modality; a new image gets the first one."""
        image = self.state.image
        if image is self._shown_image:
            return
        self._shown_image = image
        usable = image is not None and not getattr(image, "rgb", False)
        self.presets = presets_for(self.state.modality()) if usable else ()
        with self.display.changed.blocked():
            self.display.choices = [p.name for p in self.presets]
        self.display.enabled = usable
        if usable:
            self.set_display(self.presets[0].name)

    def set_display(self, name: str) -> tuple[float, float]:
        """Show the image (and its attacked version) with preset ``name``; returns the limits."""
        names = [p.name for p in self.presets]
        if name not in names:
            raise ValueError(f"no display preset {name!r} for this image: use one of {names}")
        with self.display.changed.blocked():
            self.display.value = name
        preset = self.presets[names.index(name)]
        image = self.state.image
        limits = preset.limits(np.asarray(image.data))
        lo, hi = limits
        for layer in (image, self.state.attacked_image):
            if layer is not None and not getattr(layer, "rgb", False):
                range_lo, range_hi = layer.contrast_limits_range
                if lo < range_lo or hi > range_hi:  # widen the slider to hold the limits
                    layer.contrast_limits_range = (min(lo, range_lo), max(hi, range_hi))
                layer.contrast_limits = (lo, hi)
        return limits

    def _display_picked(self, name: str | None) -> None:
        if name is not None:
            run_guarded("display", lambda: self.set_display(name))

    def _refresh_fields(self) -> None:
        image, labels = self.state.image, self.state.reference
        info = describe_layer(image)
        if labels is not None:
            names = ", ".join(f"{k}: {v}" for k, v in self.state.structures.items())
            info["structures"] = names or "-"
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
        if any(abs(a - b) > 1e-6 for a, b in zip(image.scale[-labels.ndim :], labels.scale)):
            return "reference spacing differs from image spacing"
        return "reference lines up with the image"
