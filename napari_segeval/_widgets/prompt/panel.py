"""The *Prompt & propagate* panel: a model, prompts per structure, propagation, corrections."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from magicgui.widgets import ComboBox, SpinBox
from qtpy.QtWidgets import QFrame, QGroupBox, QScrollArea, QWidget

from napari_segeval._names import CLEAN
from napari_segeval._widgets._form import form, hbox, vbox
from napari_segeval._widgets._layers import HEATMAP_LOOKS, grid_layer
from napari_segeval._widgets._state import Panel, ViewerState, current_index
from napari_segeval._widgets.jobs.tasks import (
    Capability,
    capability,
    keeps_frames,
    load_model,
    uncertainty,
)
from napari_segeval._widgets.jobs.worker import JobRunner, button
from napari_segeval._widgets.models.picker import ModelPicker
from napari_segeval._widgets.prompt.live import LiveLabels
from napari_segeval._widgets.prompt.run import PropagationJobs, estimate_text
from napari_segeval._widgets.prompt.tools import PromptTools, case_key
from napari_segeval.io.case import MODALITIES
from napari_segeval.models._device import DEVICE_CHOICES

WINDOWS = ("default", "abdomen", "lung", "brain", "mediastinum")
#: The row of the model's CT window: its preprocessing, not the display.
WINDOW_ROW = "model input window (CT)"


class PromptPanel(Panel):
    """Pick a structure and a model, prompt it on any slice, propagate and correct."""

    def __init__(self, napari_viewer: Any, state: ViewerState | None = None) -> None:
        super().__init__(napari_viewer, state)
        self.structure = ComboBox(label="structure", choices=[])
        self.structure.changed.connect(self._structure_picked)
        self.device = ComboBox(label="device", choices=list(DEVICE_CHOICES))
        self.modality = ComboBox(
            label="modality",
            choices=["from image", *MODALITIES],
            tooltip="modality for the intensity mapping (CT window, MR clip ...); "
            "'from image': the reader's (DICOM, dataset.json, guess)",
        )
        self.ct_window = ComboBox(
            label=WINDOW_ROW,
            choices=list(WINDOWS),
            tooltip="the CT window the model's input is mapped with (its preprocessing, "
            "not what you see: the Case panel's display presets set that); CT only",
        )
        self.picker = ModelPicker(napari_viewer, device=lambda: self.device.value)
        self.backend = self.picker.combo  # the model list (a registry label per model)
        self.ct_window.changed.connect(self._window_picked)
        self.modality.changed.connect(lambda _text: self._window_applies())
        self.run_button = button(
            "Run propagation",
            "propagate every structure's prompts from scratch",
            self.run,
            "propagation",
        )
        self.samples = SpinBox(
            value=8,
            min=2,
            max=64,
            tooltip="uncertainty samples: propagations with jittered boxes and intensity noise",
        )
        self.uncertainty_button = button(
            "Uncertainty",
            "heat map of the prediction's uncertainty (box jitter + intensity noise): "
            "one whole propagation per sample",
            self.run_uncertainty,
            "uncertainty",
        )
        self.samples.changed.connect(lambda _n: self.show_estimate())
        self.volume_button = button(
            "Take the volume shown",
            "a time series of volumes: add the volume at the current "
            "time point (and its reference) as 3D layers to work on",
            self.take_volume,
            "take volume",
        )
        self.volume_button.setVisible(self.state.kind() == "series")
        self.runner = JobRunner(viewer=napari_viewer)
        self.live = LiveLabels(napari_viewer, self.state)  # as it runs
        self.runner.job_done.connect(lambda _name, _outcome: self.live.stop())
        # loads the chosen model when only its weights say whether it takes points
        self.probe = JobRunner(activity=False, viewer=napari_viewer, notify=False)
        self.probe.setVisible(False)
        self._loaded: tuple | None = None
        self._dense_note = ""  # the line saying the prediction shown is a dense model's
        self.tools = PromptTools(napari_viewer, self.state, self.repropagate)
        self.jobs = PropagationJobs(self)
        self._build()
        self.picker.changed.connect(self.update_capability)
        self.picker.changed.connect(lambda *_: self.show_estimate())
        self.picker.loaded.connect(self._probed)
        self.runner.job_done.connect(lambda _name, _outcome: self.show_estimate())
        ev = self.state.events
        ev.all.connect(self._on_state)
        for signal in (ev.reference, ev.current):
            signal.connect(self._fill_structures)
        ev.model.connect(self.update_capability)
        ev.model.connect(self._say_dense)
        for signal in (ev.image, ev.reference):
            signal.connect(self._window_applies)
        self._fill_structures()
        self._window_applies()
        self.update_capability()

    def _build(self) -> None:
        model = QGroupBox("model")
        vbox(model, self.picker)
        inner = QWidget()
        settings = form(self.device, self.modality, self.ct_window)
        shown = (form(self.structure), model, settings, self.volume_button, self.tools)
        vbox(inner, *shown, 1, tight=True)
        scroll = QScrollArea()  # a short dock scrolls instead of squeezing the tools
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(inner)
        # the job's button and its progress stay in view, below the scrolled part
        run_row = (self.run_button, self.uncertainty_button, self.samples.native)
        row = hbox(*run_row, stretch=self.run_button)
        vbox(self, scroll, row, self.runner, self.probe, stretch=scroll)

    def _fill_structures(self) -> None:
        with self.structure.changed.blocked():
            self.structure.choices = [
                (f"{label} {name}", label) for label, name in self.state.structures.items()
            ]
            if self.state.current in self.state.structures:
                self.structure.value = self.state.current

    def _structure_picked(self, label: int | None) -> None:
        if label is not None:
            self.state.set_current(int(label))

    def _on_state(self) -> None:
        if self.jobs.case is not None and self.jobs.case != case_key(self.state):
            self.jobs.drop()  # another case: its session does not fit
        self.volume_button.setVisible(self.state.kind() == "series")

    def _say_dense(self) -> None:
        """Note that the prediction shown is a dense model's: prompts here run the chosen model."""
        key = self.state.model_key
        if self.state.model_kind == "dense" and key:
            from pathlib import PurePath

            name = PurePath(str(key[1])).name or str(key[1])
            self._dense_note = (
                f"the prediction shown comes from {name}, a dense model: it "
                "takes no prompts. Prompts here run the model chosen above "
                "(Run propagation replaces that prediction)"
            )
            self.tools.note(self._dense_note)
        elif self._dense_note and self.tools.info.text() == self._dense_note:
            self._dense_note = ""
            self.tools.note("")

    def take_volume(self) -> tuple[Any, Any]:
        """Add the volume shown of a time series as 3D layers (the case now), hide the series';
        returns the new ``(image, reference or None)``."""
        from napari_segeval._layer_data import case_to_layers
        from napari_segeval.io import select_volume

        image = self.state.image
        if image is None or self.state.kind() != "series":
            raise ValueError("the image is not a time series of volumes")
        t = current_index(self.viewer, image) or 0
        case = self.state.to_case()
        if case.labels is not None and case.labels.ndim != 4:
            case.labels = None  # a 3D reference already fits any volume: keep it as it is
        volume = select_volume(case, t)
        made = case_to_layers(volume, f"{image.name} t={t}")
        new_image = self.viewer.add_image(made[0][0], **made[0][1])
        new_ref = self.viewer.add_labels(made[1][0], **made[1][1]) if len(made) > 1 else None
        old = [image] + ([self.state.reference] if new_ref is not None else [])
        for layer in old:
            layer.visible = False
        reference = new_ref if new_ref is not None else self.state.reference
        # one change for the panels; predictions of the series do not fit a volume
        self.state.set_case(new_image, reference, {}, self.state.current)
        return new_image, new_ref

    def chosen_modality(self) -> str:
        """The modality picked in the panel, else the one the reader recorded."""
        text = self.modality.value
        return self.state.modality() if text == "from image" else text

    def _window_picked(self, text: str) -> None:
        self.state.window = None if text == "default" else text

    def _window_applies(self) -> bool:
        """Enable the model input window for a CT only (True when it applies)."""
        ct = self.chosen_modality() == "CT"
        self.ct_window.enabled = ct
        return ct

    def spec(self) -> tuple[str, str | None, str]:
        """``(model name, checkpoint or None, device)`` of the chosen model."""
        return (*self.picker.choice(), self.device.value)

    def cached_model(self) -> tuple | None:
        """``(spec, model)`` of a loaded model of the chosen spec, if there is one."""
        spec = self.spec()
        if self.state.model is not None and self.state.model_key == spec:
            return spec, self.state.model
        return self._loaded if self._loaded is not None and self._loaded[0] == spec else None

    def update_capability(self) -> Capability:
        """Tell the tools what the chosen model takes (loading it if only it can say)."""
        cached = self.cached_model()
        cap = capability(self.spec(), None if cached is None else cached[1])
        self.tools.set_capability(cap)
        self.run_button.setEnabled(cap.prompts)
        self.uncertainty_button.setEnabled(cap.prompts)
        idle = not self.probe.running and self.picker.ready()  # ready: never a download
        if cap.points is None and self.isVisible() and idle:
            spec = self.spec()
            done = partial(self._probed, spec)
            self.probe.start(f"loading {spec[0]}", load_model, *spec, on_done=done)
        return cap

    def _probed(self, spec: tuple, model: Any) -> None:
        self._loaded = (spec, model)
        self.update_capability()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.update_capability()

    def run(self) -> Any:
        """Propagate every structure's prompts (a new session) in a worker."""
        self.picker.require()
        return self.jobs.start(fresh=True)

    def repropagate(self, auto: bool = False) -> Any:
        """Propagate again the structures whose prompts changed (the session's others stay)."""
        self.picker.require()
        return self.jobs.start(fresh=False, auto=auto)

    def start_correction(
        self,
        sets: dict,
        labels: np.ndarray | None,
        *,
        name: str,
        case_id: str | None = None,
        note: str = "",
        options: dict | None = None,
    ) -> None:
        """Correct ``labels`` made from ``sets`` (with ``options``), writing layer ``name``."""
        self.tools.start_over(sets)
        self.jobs.start_from(labels, sets, name=name, case_id=case_id, options=options)
        self.tools.note(note)

    def show_estimate(self) -> str:
        """Say on the Uncertainty button how long it will take; returns that text."""
        cached = self.cached_model()
        text = estimate_text(
            self.jobs.propagation_seconds(),
            int(self.samples.value),
            encodes_once=keeps_frames(self.spec(), None if cached is None else cached[1]),
        )
        self.uncertainty_button.setText(f"Uncertainty ({text})" if text else "Uncertainty")
        return text

    def run_uncertainty(self) -> Any:
        """Uncertainty heat map of the clean prediction in a worker (:func:`uncertainty`)."""
        if self.state.image is None:
            raise ValueError("choose an image layer first")
        self.picker.require()
        try:
            prompts = self.tools.prompts()
        except ValueError:
            prompts = dict(self.state.prompts)
            if not prompts:
                raise
        cached = self.cached_model()
        image, pred = self.state.image, self.state.predictions.get(CLEAN)
        job = self.runner.start(
            "uncertainty",
            uncertainty,
            self.spec(),
            cached,
            np.asarray(image.data),
            self.chosen_modality(),
            prompts,
            self.state.kind(),
            None if pred is None else np.asarray(pred.data),
            dict(self.state.structures),
            window=self.state.window,
            n_samples=int(self.samples.value),
            needs=[image] + ([] if pred is None else [pred]),
            on_done=lambda result: self._uncertainty_done(result, image.name),
        )
        estimate = self.show_estimate()
        if job is not None and estimate:  # said before the first sample reports
            n = int(self.samples.value)
            self.runner.status.setText(f"uncertainty: {n} samples, {estimate}...")
        return job

    def _uncertainty_done(self, result: tuple, base: str) -> None:
        model, umap, scores = result
        if self.state.model_kind != "dense":  # keep the dense model that made the prediction
            self.state.set_model(model, self.spec(), "promptable")
        meta = {
            "method": "prompt-jitter",
            "n_samples": int(self.samples.value),
            "units": "normalised entropy (0 certain, 1 uniform)",
        }
        looks = {**HEATMAP_LOOKS, "contrast_limits": (0.0, 1.0)}
        grid_layer(self.viewer, self.state, "image", umap, f"{base} uncertainty", meta, looks)
        self.state.set_uncertainty(scores)
