"""The case's layers: choosing them (image, reference, clean and attacked predictions), and
making prediction and heat-map layers on the reference's grid."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
from magicgui.widgets import ComboBox
from napari.layers import Image, Labels

from napari_segeval._names import CLEAN
from napari_segeval._widgets import colours
from napari_segeval._widgets._form import form, vbox
from napari_segeval._widgets._state import CONDITIONS, Panel, ViewerState

NONE = "(none)"
ROLES = ("image", "reference", *CONDITIONS)


def _choices(viewer: Any, kind: type[Image | Labels], _widget: Any) -> list[tuple[str, Any]]:
    """A combo box's choices: :data:`NONE`, then the viewer's layers of class ``kind``."""
    return [(NONE, NONE), *((ly.name, ly) for ly in viewer.layers if isinstance(ly, kind))]


class LayerPicker(Panel):
    """Combo boxes bound both ways to a :class:`ViewerState`, following the viewer's layers;
    each lists :data:`NONE` first (magicgui does not report a change to None)."""

    def __init__(self, viewer: Any, state: ViewerState, roles: Sequence[str] = ROLES) -> None:
        super().__init__(viewer, state)
        unknown = [r for r in roles if r not in ROLES]
        if unknown:
            raise ValueError(f"unknown roles {unknown}: use some of {ROLES}")
        # no reference to self in the combos: psygnal then lets a closed panel go
        self.combos = {
            role: ComboBox(
                label=role, choices=partial(_choices, viewer, Image if role == "image" else Labels)
            )
            for role in roles
        }
        vbox(self, form(*self.combos.values()), tight=True)
        for role, combo in self.combos.items():
            combo.changed.connect(partial(self._picked, role))
        layer_events = viewer.layers.events
        for event in (layer_events.inserted, layer_events.removed, layer_events.renamed):
            event.connect(self._refill)
        viewer.layers.events.inserted.connect(self._take_opened_labels)
        for role in self.combos:
            state.events[role].connect(self._refill)
        self._guess()
        self._refill()

    def _guess(self) -> None:
        """Pick an image and a reference (named, "reference", or opened from a file) if unset."""
        layers = list(self.viewer.layers)
        if self.state.image is None:  # setting None again changes nothing
            self.state.set_image(next((ly for ly in layers if isinstance(ly, Image)), None))
        if self.state.reference is None:
            labels = [ly for ly in layers if isinstance(ly, Labels)]
            named = [ly for ly in labels if (ly.metadata or {}).get("structures")]
            refs = named or [ly for ly in labels if "reference" in ly.name.lower()]
            if refs:
                self.state.set_reference(refs[0])
            else:
                self._take_opened_labels()

    def _take_opened_labels(self, event: Any = None) -> None:
        """With no reference chosen, take the one Labels layer the reader opened as labels."""
        if self.state.reference is not None:
            return
        opened = [
            ly
            for ly in self.viewer.layers
            if isinstance(ly, Labels) and (ly.metadata or {}).get("labels_reason")
        ]
        if len(opened) == 1:
            self.state.set_reference(opened[0])

    def _refill(self, event: Any = None) -> None:
        for role, combo in self.combos.items():
            layer = self.state.layer(role)
            shown = layer is not None and layer in self.viewer.layers
            with combo.changed.blocked():
                combo.reset_choices()
                combo.value = layer if shown else NONE
            if layer is not None and not shown:  # the chosen layer was deleted
                self._picked(role, None)

    def _picked(self, role: str, layer: Any) -> None:
        self.state.set_layer(role, None if isinstance(layer, str) else layer)  # str: NONE


def prediction_layer(
    viewer: Any, state: ViewerState, data: np.ndarray, name: str, role: str = CLEAN
) -> Any:
    """Add (or replace the data of) a Labels layer on the reference's grid, drawn as ``role``."""
    meta = {
        "geometry": state.geometry().to_dict(),
        "modality": state.modality(),
        "axes": state.axes(),
        "structures": dict(state.structures),
    }
    looks = {
        "opacity": colours.PREDICTION_OPACITY,
        "colormap": colours.colormap(role, state.structures),
    }
    return grid_layer(viewer, state, "labels", data, name, meta, looks)


#: How an uncertainty heat map is drawn.
HEATMAP_LOOKS = {"colormap": "inferno", "opacity": 0.6, "blending": "additive"}


def grid_layer(
    viewer: Any, state: ViewerState, kind: str, data: np.ndarray, name: str, meta: dict, looks: dict
) -> Any:
    """Layer ``name`` with ``data`` (``meta`` updated), else a new one placed as the reference."""
    layer = next((ly for ly in viewer.layers if ly.name == name), None)
    if isinstance(layer, Labels if kind == "labels" else Image):
        layer.data = data
        layer.metadata.update(meta)
        return layer
    ref = state.reference if state.reference is not None else state.image
    if ref is not None:
        n = data.ndim
        looks = {**looks, "scale": tuple(ref.scale)[-n:], "translate": tuple(ref.translate)[-n:]}
    add = viewer.add_labels if kind == "labels" else viewer.add_image
    return add(data, name=name, metadata=dict(meta), **looks)
