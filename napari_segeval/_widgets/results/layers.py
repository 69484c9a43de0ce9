"""The layers the *Results* panel owns: built from a loaded case, swapped in one step."""

from __future__ import annotations

import contextlib
from typing import Any

from napari_segeval._names import CLEAN
from napari_segeval._widgets import colours

IMAGE_ROLES = ("image", "perturbed", "perturbation")
#: Layer properties napari takes only once a layer exists (set when it is created).
AFTER_CREATION = ("contour",)


def prediction_role(key: str) -> str:
    """Role of a saved prediction's layer: ``clean``, else ``attacked:<key>`` (other models too)."""
    return CLEAN if key == CLEAN else f"attacked:{key}"


def layer_specs(loaded: Any, ids: list[int] | None = None) -> list[tuple[str, Any, dict, str]]:
    """``(role, data, kwargs, layer type)`` for every layer of a loaded case, bottom first,
    placed as the image; ``ids``: the reference's label ids if counted."""
    from napari_segeval._layer_data import case_to_layers
    from napari_segeval.evaluation.keys import FileKind, PredictionKey

    case, cid = loaded.case, loaded.case_id
    base = case_to_layers(case, cid, ids)
    img_data, img_kw, _ = base[0]
    img_kw = {**img_kw, "name": f"{cid} image"}
    place = {k: img_kw[k] for k in ("scale", "translate")}
    meta = dict(img_kw["metadata"])
    out = [("image", img_data, img_kw, "image")]
    attacked = PredictionKey.parse(loaded.focus).first_round() if loaded.focus else None
    focus = "" if attacked is None else str(attacked)  # a round: its attack's images

    def source(kind: FileKind) -> str | None:
        return None if attacked is None else loaded.files.get(str(attacked.image(kind)))

    for kind in (FileKind.PERTURBED, FileKind.PERTURBATION):
        data = getattr(loaded, kind.value)
        if data is None:
            continue
        kw = {
            **place,
            "name": f"{cid} {kind.value} ({focus})",
            "rgb": case.is_rgb,
            "visible": False,
            "metadata": {**meta, "source": source(kind)},
        }
        if kind is FileKind.PERTURBATION:
            m = loaded.perturbation_range or 1.0
            kw["contrast_limits"] = (-m, m)
            if not case.is_rgb:
                kw["colormap"] = "PiYG"
        out.append((kind.value, data, kw, "image"))
    reference = base[1] if len(base) > 1 else None
    structures = {int(k): str(v) for k, v in case.structures.items()}
    labels_meta = {**meta, "structures": dict(case.structures)}
    features = reference[1].get("features") if reference else None
    for cond, labels in loaded.predictions.items():
        role = prediction_role(cond)
        kw = {
            **place,
            "name": f"{cid} {cond}",
            "opacity": colours.PREDICTION_OPACITY,
            "colormap": colours.colormap(CLEAN if role == CLEAN else "attacked", structures),
            "metadata": {
                **labels_meta,
                "source": loaded.files.get(cond),
                "prediction": PredictionKey.parse(cond),
            },
        }
        if features is not None:
            kw["features"] = features
        out.append((role, labels, kw, "labels"))
    if reference is not None:  # on top: its outline stays visible over a prediction
        ref_data, ref_kw, _ = reference
        ref_kw = {
            **ref_kw,
            "name": f"{cid} reference",
            "colormap": colours.colormap("reference", structures),
            "contour": colours.REFERENCE_CONTOUR,
        }
        out.append(("reference", ref_data, ref_kw, "labels"))
    return out


class CaseLayers:
    """The browser's layers in one viewer, and what it remembers across cases (camera,
    contrast limits and looks by modality and role)."""

    def __init__(self, viewer: Any) -> None:
        self.viewer = viewer
        self.layers: dict[str, Any] = {}
        self.modality: str | None = None
        self.cameras: dict[str, tuple] = {}
        self.limits: dict[tuple[str, str], tuple[float, float]] = {}
        self.looks: dict[str, dict] = {}

    def _key(self, role: str) -> str:
        return "attacked" if role.startswith("attacked:") else role

    @staticmethod
    def is_prediction(role: str) -> bool:
        """True for the clean, attacked and corrected (Prompt tab) prediction roles."""
        return role in (CLEAN, "corrected") or role.startswith("attacked:")

    def show_prediction(self, role: str) -> None:
        """Show the prediction layer of ``role`` and hide the other predictions."""
        for r, layer in self.layers.items():
            if self.is_prediction(r):
                layer.visible = r == role

    def remember(self) -> None:
        """Note the camera, contrast limits and looks of the layers shown now."""
        live = {r: ly for r, ly in self.layers.items() if ly in self.viewer.layers}
        if not live:
            return
        if self.modality is not None:
            cam = self._camera()
            self.cameras[self.modality] = (cam.zoom, tuple(cam.center))
            for role, layer in live.items():
                if role in IMAGE_ROLES:
                    self.limits[(self.modality, role)] = tuple(layer.contrast_limits)
        for role, layer in live.items():
            look = {"opacity": layer.opacity}
            if not self.is_prediction(role):  # predictions are shown by the selected row
                look["visible"] = layer.visible
            self.looks[self._key(role)] = look

    @staticmethod
    def _fits(layer: Any, data: Any, kwargs: dict, kind: str) -> bool:
        from napari.layers import Image, Labels

        cls = Image if kind == "image" else Labels
        return (
            type(layer) is cls
            and layer.ndim == data.ndim - bool(kwargs.get("rgb"))  # RGB: no dimension
            and bool(getattr(layer, "rgb", False)) == bool(kwargs.get("rgb", False))
        )

    def _camera(self) -> Any:
        scene = getattr(self.viewer, "scene", None)  # napari >= 0.9
        return scene.camera if scene is not None else self.viewer.camera

    def _update(self, layer: Any, role: str, data: Any, kwargs: dict) -> None:
        import numpy as np

        layer.name = kwargs["name"]
        layer.metadata = kwargs["metadata"]  # AFTER_CREATION looks stay as the person set them
        for attr in ("scale", "translate"):  # each change re-slices: only when it moved
            if not np.allclose(getattr(layer, attr), kwargs[attr]):
                setattr(layer, attr, kwargs[attr])
        layer.data = data
        if "features" in kwargs:
            layer.features = kwargs["features"]
        if "colormap" in kwargs and role not in IMAGE_ROLES:  # the case's structures may differ
            layer.colormap = kwargs["colormap"]
        if "contrast_limits" in kwargs:
            layer.contrast_limits = kwargs["contrast_limits"]
        elif role in IMAGE_ROLES:
            layer.reset_contrast_limits()

    def swap(
        self, specs: list[tuple[str, Any, dict, str]], modality: str, point_state: Any = None
    ) -> dict[str, Any]:
        """Replace the shown layers by ``specs`` in one main-thread step; returns them by role.

        A layer of the same role, type, dimensionality and colour mode is reused (napari then
        builds no new visual). ``point_state(None)`` is called first, ``point_state(layers)``
        once the new ones are in place, before unused old ones are removed.
        """
        from napari.layers import Layer

        self.remember()
        old = {r: ly for r, ly in self.layers.items() if ly in self.viewer.layers}
        if point_state is not None:
            point_state(None)
        first = not any(True for _ in self.viewer.layers)
        new: dict[str, Any] = {}
        reusable = all(r in old and self._fits(old[r], d, k, t) for r, d, k, t in specs)
        # a batch makes napari rebuild its scene once, after all adds and removals;
        # with every layer reused there is nothing to rebuild (and ending a batch costs)
        batch = (
            contextlib.nullcontext()
            if reusable and len(old) == len(specs)
            else self.viewer.layers.batched_update()
        )
        with batch:
            for role, data, kwargs, kind in specs:
                kw = dict(kwargs)
                if role in IMAGE_ROLES and (modality, role) in self.limits:
                    kw["contrast_limits"] = self.limits[(modality, role)]
                layer = old.get(role)
                if layer is not None and self._fits(layer, data, kw, kind):
                    del old[role]
                    self._update(layer, role, data, kw)
                else:
                    kw.update(self.looks.get(self._key(role), {}))
                    after = {k: kw.pop(k) for k in AFTER_CREATION if k in kw}
                    layer = self.viewer.add_layer(Layer.create(data, kw, kind))
                    for key, value in after.items():
                        setattr(layer, key, value)
                new[role] = layer
            if "perturbed" in new and "image" in new and (modality, "perturbed") not in self.limits:
                new["perturbed"].contrast_limits = new["image"].contrast_limits
            self.layers = new
            if point_state is not None:
                point_state(new)
            for layer in old.values():
                self.viewer.layers.remove(layer)
        if modality in self.cameras:
            zoom, center = self.cameras[modality]
            cam = self._camera()
            cam.center = center
            cam.zoom = zoom
        elif not first:
            self.viewer.reset_view()
        self.modality = modality
        return new

    def clear(self) -> None:
        """Remove the browser's layers (a new results folder was opened)."""
        self.remember()
        with self.viewer.layers.batched_update():
            for layer in list(self.layers.values()):
                if layer in self.viewer.layers:
                    self.viewer.layers.remove(layer)
        self.layers = {}
