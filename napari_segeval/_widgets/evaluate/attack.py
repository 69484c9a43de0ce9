"""The *Attack* panel: attack the model of the clean prediction (or one chosen), compare.

Epsilon is in normalized units (``--eps``), shown in raw units too."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from magicgui.widgets import ComboBox, FloatSpinBox, Label, SpinBox
from qtpy.QtWidgets import QGroupBox

from napari_segeval._names import CLEAN
from napari_segeval._widgets._form import form, text_line, vbox
from napari_segeval._widgets._layers import prediction_layer
from napari_segeval._widgets._state import SERIES_HINT, Panel, ViewerState
from napari_segeval._widgets.jobs.tasks import attack, attack_with
from napari_segeval._widgets.jobs.worker import JobRunner, button
from napari_segeval._widgets.models.picker import ModelPicker

#: Diverging colormap of the perturbation layer.
PERTURBATION_COLORMAP = "PiYG"
#: What the panel's epsilon (normalized units) and steps boxes take.
EPS_RANGE = (0.0, 1.0)
STEPS_RANGE = (1, 500)
#: The form's first values: ``segeval attack``'s attack and steps, a small epsilon.
DEFAULT_ATTACK, DEFAULT_EPS, DEFAULT_STEPS = "pgd", 0.02, 10


class AttackPanel(Panel):
    """Choose an attack and its budget, run it, add perturbed image, perturbation, prediction."""

    def __init__(self, napari_viewer: Any, state: ViewerState) -> None:
        super().__init__(napari_viewer, state)
        from napari_segeval.attacks import ATTACKS

        self.attack = ComboBox(
            label="attack",
            choices=list(ATTACKS),
            value=DEFAULT_ATTACK,
            tooltip="\n".join(f"{name}: {a.summary}" for name, a in ATTACKS.items()),
        )
        self.eps = FloatSpinBox(
            label="epsilon (normalized)",
            value=DEFAULT_EPS,
            min=EPS_RANGE[0],
            max=EPS_RANGE[1],
            step=0.005,
        )
        self.eps.native.setDecimals(4)  # magicgui gives the step's 3
        self.raw = Label(label="epsilon (raw units)")
        self.steps = SpinBox(
            label="steps", value=DEFAULT_STEPS, min=STEPS_RANGE[0], max=STEPS_RANGE[1]
        )
        self.eps.changed.connect(self._show_raw)
        self.run_button = button("Run attack", "", self.run, "attack")
        self.runner = JobRunner(viewer=napari_viewer)
        self.picker = ModelPicker(
            napari_viewer,
            first=("model of the clean prediction", "the one that made the clean prediction"),
        )
        self.result: Any = None
        about = text_line(
            "attacks the model of the clean prediction (Segment, or Prompt with "
            "its boxes), or the model chosen here with the prompts of the last "
            "propagation"
        )
        model = QGroupBox("model")
        vbox(model, self.picker)
        fields = form(self.attack, self.eps, self.raw, self.steps)
        vbox(self, about, model, fields, self.run_button, self.runner, 1)
        ev = self.state.events
        for signal in (ev.image, ev.clean, ev.model):
            signal.connect(self._show_raw)
        self._show_raw()

    def model_kind(self) -> str | None:
        """``"promptable"`` or ``"dense"``: the kind of the model attacked (None: no model)."""
        return None if self.state.model is None else self.state.model_kind or "promptable"

    def raw_epsilon(self) -> float | None:
        """Epsilon in raw units for the loaded model, or None before a model is loaded."""
        model, image = self.state.model, self.state.image
        if model is None or image is None:
            return None
        if self.model_kind() == "dense":
            scale = float(model.raw_per_normalized_unit)
        else:
            data = np.asarray(image.data)
            info = model.normalize_info(self.state.modality(), self.state.window, data)
            scale = float(info.raw_per_normalized_unit)
        return float(self.eps.value) * scale

    def _show_raw(self, *_: Any) -> None:
        try:
            value = self.raw_epsilon()
        except Exception as exc:  # noqa: BLE001 - a label, not an action
            self.raw.value = f"unknown ({exc})"
            return
        if value is None:
            self.raw.value = "segment or propagate first (the model sets the units)"
            return
        unit = "HU" if self.state.modality().upper() == "CT" else "grey levels"
        self.raw.value = f"{value:.3g} {unit}"

    def run(self) -> Any:
        """Attack in a worker thread; on success add the layers and the attacked prediction."""
        case = self.state.to_case()
        if self.state.kind() == "series":
            raise ValueError(SERIES_HINT)
        image, name = self.state.image, self.attack.value
        budget = (name, float(self.eps.value), int(self.steps.value))
        start = partial(self.runner.start, "attack", needs=[] if image is None else [image])
        model, prompts, window = self.state.model, dict(self.state.prompts), self.state.window
        chosen = self.picker.choice()
        if chosen[0]:  # the model chosen in the picker, with the prompts of the last propagation
            self.picker.require()
            if not prompts:
                raise ValueError(
                    "run propagation first: the chosen model is attacked with the "
                    "prompts of the last propagation (Prompt tab)"
                )
            spec = (*chosen, "auto")
            cached = (spec, model) if model is not None and self.state.model_key == spec else None
            done = partial(self._chosen_done, spec=spec, image=image, attack_name=name)
            return start(
                attack_with, spec, cached, case, prompts, *budget, window=window, on_done=done
            )
        done = partial(self._done, image=image, attack_name=name)
        if self.model_kind() == "dense":
            if case is None or case.axes != "zyx":
                raise ValueError("the dense model attacks 3D volumes only")
            return start(attack, model, case, None, *budget, on_done=done)
        if model is None or not prompts:
            raise ValueError(
                "run propagation first (or segment with a dense model): the "
                "attack uses the model of the clean prediction"
            )
        return start(attack, model, case, prompts, *budget, window=window, on_done=done)

    def _chosen_done(self, out: tuple, spec: tuple, image: Any, attack_name: str) -> None:
        """The chosen model's clean prediction becomes the clean one, then as :meth:`_done`."""
        model, result = out
        base = image.name if image is not None else "case"
        clean = prediction_layer(
            self.viewer, self.state, result.clean_prediction, f"{base} prediction ({spec[0]})"
        )
        self.state.set_model(model, spec, "promptable")
        self.state.set_prediction(CLEAN, clean)
        self._done(result, image, attack_name)

    def _done(self, result: Any, image: Any, attack_name: str) -> None:
        self.result = result
        base = image.name if image is not None else "case"
        pert = result.perturbation
        place = {} if image is None else {"scale": image.scale, "translate": image.translate}
        spatial = {k: tuple(v)[-pert.ndim :] for k, v in place.items()}  # an RGB image's too
        limits = None if image is None else image.contrast_limits
        rgb = getattr(image, "rgb", False) or None
        name = f"{base} attacked ({attack_name})"
        attacked = self._set_image(name, result.perturbed_image, limits, rgb=rgb, **place)
        self.state.set_attacked_image(attacked)
        bound = float(np.max(np.abs(pert))) or 1.0
        looks = {"colormap": PERTURBATION_COLORMAP, "visible": False, **spatial}
        self._set_image(f"{base} perturbation", pert, (-bound, bound), **looks)
        layer = prediction_layer(
            self.viewer,
            self.state,
            result.attacked_prediction,
            f"{base} attacked prediction",
            role="attacked",
        )
        self.state.set_prediction("attacked", layer)

    def _set_image(self, name: str, data: np.ndarray, limits: Any, **kwargs: Any) -> Any:
        """Replace the data of layer ``name``, or add it with ``kwargs`` (an RGB one as uint8)."""
        if name in self.viewer.layers:
            layer = self.viewer.layers[name]
            layer.data = data
            if limits is not None:
                layer.contrast_limits = limits
            return layer
        if kwargs.get("rgb"):
            data, limits = np.clip(data, 0, 255).astype(np.uint8), None
        kwargs = {k: v for k, v in {**kwargs, "contrast_limits": limits}.items() if v is not None}
        return self.viewer.add_image(data, name=name, **kwargs)
