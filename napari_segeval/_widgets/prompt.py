"""The *Prompt & propagate* panel: box prompts per structure, a model, propagation."""

from __future__ import annotations

from typing import Any

import numpy as np
from napari.layers import Image, Labels
from qtpy.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from napari_segeval._widgets._live import LiveLabels
from napari_segeval._widgets._state import (
    SERIES_HINT,
    ViewerState,
    current_index,
    go_to_index,
    shared_state,
)
from napari_segeval._widgets._worker import JobRunner, run_guarded
from napari_segeval._widgets.evaluate_jobs import BACKENDS, DEVICES, segment_with_model, uncertainty
from napari_segeval.io.case import MODALITIES

BOXES_NAME = "boxes"
WINDOWS = ("default", "abdomen", "lung", "brain", "mediastinum")


def prediction_layer(viewer: Any, state: ViewerState, data: np.ndarray, name: str) -> Any:
    """Add (or replace the data of) a Labels layer on the reference's grid and colours."""
    ref = state.reference if state.reference is not None else state.image
    meta = {"geometry": state.geometry().to_dict(), "modality": state.modality(),
            "axes": state.axes(), "structures": dict(state.structures)}
    if name in viewer.layers and isinstance(viewer.layers[name], Labels):
        layer = viewer.layers[name]
        layer.data = data
        layer.metadata.update(meta)
        return layer
    kwargs: dict = {"name": name, "metadata": meta, "opacity": 0.6}
    if ref is not None:
        n = data.ndim
        kwargs.update(scale=tuple(ref.scale)[-n:], translate=tuple(ref.translate)[-n:])
    if state.reference is not None:
        kwargs["colormap"] = state.reference.colormap
    return viewer.add_labels(data, **kwargs)


def heatmap_layer(viewer: Any, state: ViewerState, data: np.ndarray, name: str,
                  metadata: dict | None = None) -> Any:
    """Add (or replace the data of) an uncertainty heat map on the reference's grid."""
    if name in viewer.layers and isinstance(viewer.layers[name], Image):
        layer = viewer.layers[name]
        layer.data = data
        layer.metadata.update(metadata or {})
        return layer
    ref = state.reference if state.reference is not None else state.image
    kwargs: dict = {"name": name, "colormap": "inferno", "opacity": 0.6,
                    "blending": "additive", "contrast_limits": (0.0, 1.0),
                    "metadata": dict(metadata or {})}
    if ref is not None:
        n = data.ndim
        kwargs.update(scale=tuple(ref.scale)[-n:], translate=tuple(ref.translate)[-n:])
    return viewer.add_image(data, **kwargs)


class PromptPanel(QWidget):
    """Pick a structure, draw (or derive) its box, run a promptable model over the case."""

    def __init__(self, napari_viewer: Any, state: ViewerState | None = None) -> None:
        super().__init__()
        self.viewer = napari_viewer
        self.state = state if state is not None else shared_state(napari_viewer)
        self.structure = QComboBox()
        self.structure.currentIndexChanged.connect(self._structure_picked)
        self.middle_button = QPushButton("Go to middle slice")
        self.middle_button.clicked.connect(lambda: run_guarded("go to slice", self.go_to_middle))
        self.draw_button = QPushButton("Draw box")
        self.draw_button.clicked.connect(lambda: run_guarded("draw box", self.start_drawing))
        self.ref_box_button = QPushButton("Box from reference")
        self.ref_box_button.clicked.connect(lambda: run_guarded("box", self.box_from_reference))
        self.backend = QComboBox()
        self.backend.addItems(list(BACKENDS))
        self.checkpoint = QLineEdit()
        self.checkpoint.setPlaceholderText("weights / MedSAM2 checkpoint (.pt)")
        browse = QPushButton("...")
        browse.clicked.connect(self._browse)
        self.device = QComboBox()
        self.device.addItems(list(DEVICES))
        self.window = QComboBox()
        self.window.addItems(list(WINDOWS))
        self.window.currentTextChanged.connect(self._window_picked)
        self.modality = QComboBox()
        self.modality.addItems(["from image", *MODALITIES])
        self.modality.setToolTip("modality for the intensity mapping (CT window, MR clip ...); "
                                 "'from image': the reader's (DICOM, dataset.json, guess)")
        self.run_button = QPushButton("Run propagation")
        self.run_button.clicked.connect(lambda: run_guarded("propagation", self.run))
        self.samples = QSpinBox()
        self.samples.setRange(2, 64)
        self.samples.setValue(8)
        self.samples.setToolTip("propagations with jittered boxes and intensity noise")
        self.uncertainty_button = QPushButton("Uncertainty")
        self.uncertainty_button.setToolTip("heat map of the prediction's uncertainty "
                                           "(box jitter + intensity noise)")
        self.uncertainty_button.clicked.connect(
            lambda: run_guarded("uncertainty", self.run_uncertainty))
        self.volume_button = QPushButton("Take the volume shown")
        self.volume_button.setToolTip("a time series of volumes: add the volume at the current "
                                      "time point (and its reference) as 3D layers to work on")
        self.volume_button.clicked.connect(lambda: run_guarded("take volume", self.take_volume))
        self.volume_button.setVisible(self.state.kind() == "series")
        self.runner = JobRunner(viewer=napari_viewer)
        self.live = LiveLabels(napari_viewer, self.state, prediction_layer)  # as it runs
        self.runner.job_done.connect(lambda _name, _outcome: self.live.stop())
        ck = QHBoxLayout()
        ck.addWidget(self.checkpoint, 1)
        ck.addWidget(browse)
        form = QFormLayout()
        form.addRow("structure", self.structure)
        form.addRow("backend", self.backend)
        form.addRow("checkpoint", ck)
        form.addRow("device", self.device)
        form.addRow("modality", self.modality)
        form.addRow("CT window", self.window)
        form.addRow("uncertainty samples", self.samples)
        buttons = QHBoxLayout()
        for b in (self.middle_button, self.draw_button, self.ref_box_button):
            buttons.addWidget(b)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.volume_button)
        layout.addLayout(buttons)
        run_row = QHBoxLayout()
        run_row.addWidget(self.run_button, 1)
        run_row.addWidget(self.uncertainty_button)
        layout.addLayout(run_row)
        layout.addWidget(self.runner)
        layout.addStretch(1)
        self.state.subscribe(self._on_state)
        self._fill_structures()

    # -- structures ---------------------------------------------------------------------
    def _fill_structures(self) -> None:
        self.structure.blockSignals(True)
        self.structure.clear()
        for label, name in self.state.structures.items():
            self.structure.addItem(f"{label} {name}", label)
        ids = list(self.state.structures)
        if self.state.current in ids:
            self.structure.setCurrentIndex(ids.index(self.state.current))
        self.structure.blockSignals(False)

    def _structure_picked(self, index: int) -> None:
        if index >= 0:
            self.state.set_current(int(self.structure.itemData(index)))

    def _on_state(self, what: str) -> None:
        if what in ("reference", "current"):
            self._fill_structures()
            self._update_box_defaults()
        self.volume_button.setVisible(self.state.kind() == "series")

    def take_volume(self) -> tuple[Any, Any]:
        """Add the volume shown of a time series (image and 4D reference) as 3D layers.

        The new layers carry the volume's 3D geometry and become the panels'
        image and reference; the series' layers are hidden. Returns the new
        ``(image, reference or None)`` layers.
        """
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
        text = self.modality.currentText()
        return self.state.modality() if text == "from image" else text

    def _window_picked(self, text: str) -> None:
        self.state.window = None if text == "default" else text

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Model weights", "", "PyTorch (*.pt *.pth)")
        if path:
            self.checkpoint.setText(path)

    # -- boxes --------------------------------------------------------------------------
    def _spatial_shape(self) -> tuple[int, ...]:
        layer = self.state.image if self.state.image is not None else self.state.reference
        if layer is None:
            raise ValueError("choose an image layer first")
        if self.state.kind() == "series":
            raise ValueError(SERIES_HINT)
        shape = tuple(layer.data.shape)
        return shape[:-1] if getattr(layer, "rgb", False) else shape

    def boxes_layer(self) -> Any:
        """The Shapes layer holding the box prompts (created on first use)."""
        layer = self.state.boxes
        if layer is not None and layer in self.viewer.layers:
            return layer
        ndim = len(self._spatial_shape())
        ref = self.state.image if self.state.image is not None else self.state.reference
        layer = self.viewer.add_shapes(
            ndim=ndim, name=BOXES_NAME, scale=tuple(ref.scale)[-ndim:],
            translate=tuple(ref.translate)[-ndim:], face_color="transparent",
            edge_width=1.5, features={"label": np.zeros(0, dtype=int)},
        )
        self.state.boxes = layer
        self._update_box_defaults()
        return layer

    def _update_box_defaults(self) -> None:
        layer = self.state.boxes
        if layer is None or self.state.current is None:
            return
        layer.feature_defaults = {"label": int(self.state.current)}
        if self.state.reference is not None:
            layer.current_edge_color = self.state.reference.get_color(int(self.state.current))

    def start_drawing(self) -> None:
        """Select the boxes layer in rectangle mode for the current structure."""
        if self.state.current is None:
            raise ValueError("choose a structure first")
        layer = self.boxes_layer()
        self.viewer.layers.selection.active = layer
        layer.mode = "add_rectangle"

    def _nav_layer(self) -> Any:
        return self.state.image if self.state.image is not None else self.state.reference

    def go_to_middle(self) -> int:
        """Show the middle slice of the current structure's reference extent."""
        from napari_segeval._widgets.overlays import focus_slice

        shape = self._spatial_shape()
        ref = self.state.reference
        index = focus_slice(None if ref is None else ref.data, self.state.current, shape[0])
        go_to_index(self.viewer, self._nav_layer(), index)
        return index

    def set_box(self, box: Any) -> None:
        """Put ``box`` in the boxes layer, replacing the structure's earlier box."""
        layer = self.boxes_layer()
        labels = np.asarray(layer.features["label"]) if len(layer.data) else np.zeros(0)
        old = [i for i, lab in enumerate(labels) if int(lab) == box.label]
        if old:
            layer.selected_data = set(old)
            layer.remove_selected()
        colour = (self.state.reference.get_color(box.label) if self.state.reference is not None
                  else "yellow")
        layer.add_rectangles([box.to_napari(layer.ndim)], edge_color=colour,
                             face_color="transparent")
        feats = layer.features.copy()
        feats.loc[feats.index[-1], "label"] = box.label
        layer.features = feats

    def box_from_reference(self) -> Any:
        """Box of the current structure on its middle reference slice (or first frame)."""
        from napari_segeval.prompts import box_from_labels

        ref = self.state.reference
        if ref is None or self.state.current is None:
            raise ValueError("choose a reference layer and a structure first")
        if self.state.kind() == "series":
            raise ValueError(SERIES_HINT)
        mode = "video" if self.state.kind() == "video" else "volume"
        box = box_from_labels(ref.data, int(self.state.current), mode=mode)
        self.set_box(box)
        go_to_index(self.viewer, self._nav_layer(), box.index)
        return box

    def prompts(self) -> list:
        """One :class:`~napari_segeval.prompts.Box` per structure from the boxes layer."""
        from napari_segeval._widgets.overlays import prompts_from_shapes

        if self.state.kind() == "series":
            raise ValueError(SERIES_HINT)
        layer = self.state.boxes
        if layer is None or layer not in self.viewer.layers or not len(layer.data):
            raise ValueError("no box prompt: draw a box or take it from the reference")
        labels = [int(v) for v in layer.features["label"]]
        return prompts_from_shapes(layer.data, labels, self._spatial_shape())

    # -- run ----------------------------------------------------------------------------
    def spec(self) -> tuple[str, str | None, str]:
        """(backend, checkpoint or None, device) of the chosen model."""
        return (self.backend.currentText(), self.checkpoint.text().strip() or None,
                self.device.currentText())

    def run(self) -> Any:
        """Propagate the boxes in a worker; the prediction becomes the clean prediction."""
        if self.state.image is None:
            raise ValueError("choose an image layer first")
        prompts = self.prompts()
        cached = None if self.state.model is None else (self.state.model_key, self.state.model)
        image = self.state.image
        if self.runner.running:  # keep the live layer of the running job
            from napari.utils.notifications import show_info

            show_info(f"{self.runner.worker_name} is still running: wait or cancel it")
            return None
        paint = self.live.start(f"{image.name} prediction (propagating)", self._spatial_shape())
        return self.runner.start(
            "propagation", segment_with_model, self.spec(), cached, np.asarray(image.data),
            self.chosen_modality(), prompts, self.state.kind(), window=self.state.window,
            needs=[image], relay={"on_slice": paint},
            on_done=lambda result: self._done(result, prompts, image.name),
        )

    def _done(self, result: tuple, prompts: list, base: str) -> None:
        model, labels = result
        self.live.stop()  # the final merged prediction replaces the partial one
        self.state.set_model(model, self.spec(), "promptable")
        self.state.prompts = list(prompts)
        layer = prediction_layer(self.viewer, self.state, labels, f"{base} prediction")
        self.state.set_prediction("clean", layer)

    def run_uncertainty(self) -> Any:
        """Uncertainty heat map of the clean prediction in a worker (box jitter + noise)."""
        if self.state.image is None:
            raise ValueError("choose an image layer first")
        try:
            prompts = self.prompts()
        except ValueError:
            prompts = list(self.state.prompts)
            if not prompts:
                raise
        cached = None if self.state.model is None else (self.state.model_key, self.state.model)
        image, pred = self.state.image, self.state.predictions.get("clean")
        return self.runner.start(
            "uncertainty", uncertainty, self.spec(), cached, np.asarray(image.data),
            self.chosen_modality(), prompts, self.state.kind(),
            None if pred is None else np.asarray(pred.data), dict(self.state.structures),
            window=self.state.window, n_samples=int(self.samples.value()),
            needs=[image] + ([] if pred is None else [pred]),
            on_done=lambda result: self._uncertainty_done(result, image.name))

    def _uncertainty_done(self, result: tuple, base: str) -> None:
        model, umap, scores = result
        if self.state.model_kind != "dense":  # keep the dense model that made the prediction
            self.state.set_model(model, self.spec(), "promptable")
        meta = {"method": "prompt-jitter", "n_samples": int(self.samples.value()),
                "units": "normalised entropy (0 certain, 1 uniform)"}
        heatmap_layer(self.viewer, self.state, umap, f"{base} uncertainty", meta)
        self.state.set_uncertainty(scores)
