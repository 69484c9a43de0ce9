"""The *Segment* panel: dense segmentation of the volume with the models of ``segeval segment``."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from magicgui.types import FileDialogMode
from magicgui.widgets import CheckBox, ComboBox, FileEdit
from qtpy.QtWidgets import QLabel

from napari_segeval._names import CLEAN
from napari_segeval._widgets._form import form, vbox
from napari_segeval._widgets._layers import prediction_layer
from napari_segeval._widgets._state import SERIES_HINT, Panel, ViewerState
from napari_segeval._widgets.jobs.tasks import DENSE_SOURCES, dense_ref, segment_dense
from napari_segeval._widgets.jobs.worker import JobRunner, button
from napari_segeval.models._device import DEVICE_CHOICES

#: The path box's dialog mode and placeholder per kind of path of a model source.
PATH_KINDS = {
    "folder": (FileDialogMode.EXISTING_DIRECTORY, "nnU-Net v2 results folder"),
    "file": (FileDialogMode.EXISTING_FILE, "model file (.pt)"),
    None: (FileDialogMode.EXISTING_FILE, "weights shipped"),
}


class SegmentPanel(Panel):
    """Choose a dense model, run it over the volume, keep its prediction as the clean one."""

    def __init__(self, napari_viewer: Any, state: ViewerState) -> None:
        super().__init__(napari_viewer, state)
        self.source = ComboBox(label="model", choices=list(DENSE_SOURCES))
        self.path = FileEdit(label="path", filter="PyTorch (*.pt *.pth)", nullable=True)
        self.trust = CheckBox(
            label="",
            text="trust TorchScript (it runs code from the file)",
            tooltip="as segeval's --trust-torchscript: only for files you trust",
        )
        self.device = ComboBox(label="device", choices=list(DEVICE_CHOICES))
        self.source.changed.connect(self._source_picked)
        self.run_button = button("Run segmentation", "", self.run, "segmentation")
        self.runner = JobRunner(viewer=napari_viewer)
        about = QLabel("dense segmentation of a 3D volume (no prompts)")
        fields = form(self.source, self.path, self.trust, self.device)
        vbox(self, about, fields, self.run_button, self.runner, 1)
        self._source_picked(self.source.value)

    def _source_picked(self, text: str) -> None:
        kind = DENSE_SOURCES.get(text)
        self.path.enabled = kind is not None
        self.trust.enabled = text == "TorchScript file"
        self.path.mode, placeholder = PATH_KINDS[kind]
        self.path.line_edit.native.setPlaceholderText(placeholder)

    def spec(self) -> tuple[str, bool, str]:
        """(registry reference, trust TorchScript, device) of the chosen model."""
        source, path = self.source.value, self.path.value
        ref = dense_ref(source, None if path is None else str(path).strip())
        trust = source == "TorchScript file" and self.trust.value
        return ref, trust, self.device.value

    def run(self) -> Any:
        """Segment the volume in a worker; the prediction becomes the clean prediction."""
        case = self.state.to_case()
        if case is None:
            raise ValueError("choose an image layer first")
        if self.state.kind() == "series":
            raise ValueError(SERIES_HINT)
        if case.axes != "zyx":
            raise ValueError(f"dense models segment 3D volumes; this case is a {self.state.kind()}")
        spec = self.spec()
        key = self.state.model_key
        cached = (
            None if self.state.model_kind != "dense" or not key else (key[1:], self.state.model)
        )
        image = self.state.image
        done = partial(self._done, spec=spec, base=image.name)
        return self.runner.start(
            "segmentation", segment_dense, spec, cached, case, needs=[image], on_done=done
        )

    def _done(self, result: tuple, spec: tuple, base: str) -> None:
        model, labels = result
        self.state.set_model(model, ("dense", *spec), "dense")
        self.state.prompts = {}
        layer = prediction_layer(self.viewer, self.state, np.asarray(labels), f"{base} prediction")
        layer.metadata["model"] = model.name
        self.state.set_prediction(CLEAN, layer)
