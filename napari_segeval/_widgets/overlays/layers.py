"""The overlay layers in the viewer: FP/FN, clean vs attacked disagreement, outlines."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from napari_segeval._names import CLEAN
from napari_segeval._widgets import colours
from napari_segeval._widgets._state import ViewerState, listen
from napari_segeval._widgets.overlays.arrays import (
    CHANGED,
    FALSE_NEGATIVE,
    FALSE_POSITIVE,
    GAINED,
    LOST,
    disagreement,
    error_overlay,
    touched_slices,
    union,
)

#: Colours of the overlay values (those of the clicks that would fix them).
OVERLAY_COLOURS = {
    FALSE_POSITIVE: colours.NEGATIVE_COLOUR,
    FALSE_NEGATIVE: colours.POSITIVE_COLOUR,
}
LAYER_NAME = "errors (FP magenta, FN green)"


class _Overlay:
    """One read-only Labels layer the viewer shows over the case, kept up to date."""

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        self.viewer = viewer
        self.state = state
        self.layer: Any = None

    @property
    def shown(self) -> bool:
        """True while the layer is in the viewer."""
        return self.layer is not None and self.layer in self.viewer.layers

    def _put(self, data: Any, name: str, like: Any, values: dict, opacity: float) -> Any:
        """Show ``data`` (``values`` coloured) on ``like``'s grid: a new layer, or its new data."""
        from napari.utils.colormaps import DirectLabelColormap

        if self.shown:
            self.layer.data = data
            return self.layer
        self.layer = self.viewer.add_labels(
            data,
            name=name,
            scale=like.scale,
            translate=like.translate,
            colormap=DirectLabelColormap(color_dict={**values, None: "transparent"}),
            opacity=opacity,
            blending="translucent_no_depth",
        )
        self.layer.editable = False
        return self.layer

    def hide(self) -> None:
        """Remove the layer."""
        if self.shown:
            self.viewer.layers.remove(self.layer)
        self.layer = None


class ErrorOverlay(_Overlay):
    """Keeps one Labels layer marking where a prediction disagrees with the reference."""

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        super().__init__(viewer, state)
        self.condition = CLEAN

    def _arrays(self, condition: str):
        ref, pred = self.state.reference, self.state.predictions.get(condition)
        if ref is None or pred is None or self.state.current is None:
            return None
        if ref.data.shape != pred.data.shape:
            return None
        return ref.data, pred.data

    def show(self, condition: str) -> Any:
        """Create (or update) the overlay layer for ``condition`` and the current structure."""
        self.condition = condition
        arrays = self._arrays(condition)
        if arrays is None:
            self.hide()
            return None
        data = error_overlay(arrays[0], arrays[1], int(self.state.current))
        return self._put(data, LAYER_NAME, self.state.reference, OVERLAY_COLOURS, 0.8)

    def refresh_all(self, condition: str) -> None:
        """Recompute the whole overlay (structure or layers changed)."""
        if self.shown:
            self.show(condition)

    def update_region(self, condition: str, region: slice | None) -> None:
        """Recompute the slices an edit touched (everything for ``region=None``)."""
        if not self.shown or condition != self.condition:
            return
        arrays = self._arrays(condition)
        if arrays is None or self.layer.data.shape != arrays[0].shape:
            self.hide()
            return
        if region is None:
            self.show(condition)
            return
        error_overlay(
            arrays[0], arrays[1], int(self.state.current), region=region, out=self.layer.data
        )
        self.layer.refresh()


#: Colours of the disagreement values (lost under attack, gained, changed structure).
DISAGREEMENT_COLOURS = {
    LOST: colours.DISAGREEMENT_COLOURS["lost"],
    GAINED: colours.DISAGREEMENT_COLOURS["gained"],
    CHANGED: colours.DISAGREEMENT_COLOURS["changed"],
}
DISAGREEMENT_NAME = "disagreement (lost red, gained blue, changed yellow)"


class DisagreementOverlay(_Overlay):
    """One Labels layer marking where the clean and attacked predictions differ.

    While shown it follows the predictions: a paint stroke recomputes the slices it touched,
    a new array or layer everything.
    """

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        super().__init__(viewer, state)
        self._hooks: list[tuple[Any, Any]] = []
        self._pending: slice | None | bool = False  # False: no update scheduled
        ev = state.events
        self._unlisten = listen((s, self._on_state) for s in (ev.clean, ev.attacked, ev.reference))

    def _arrays(self):
        clean = self.state.predictions.get(CLEAN)
        attacked = self.state.predictions.get("attacked")
        if clean is None or attacked is None or clean.data.shape != attacked.data.shape:
            return None
        return clean, attacked

    def show(self) -> Any:
        """Create (or recompute) the layer; None when there is no clean/attacked pair."""
        pair = self._arrays()
        if pair is None:
            self.hide()
            return None
        clean, attacked = pair
        data = disagreement(clean.data, attacked.data)
        self._put(data, DISAGREEMENT_NAME, clean, DISAGREEMENT_COLOURS, 0.9)
        self._rehook(clean, attacked)
        return self.layer

    def hide(self) -> None:
        """Remove the layer and stop following the predictions."""
        self._unhook()
        super().hide()

    def close(self) -> None:
        """Hide and stop listening to the state."""
        self.hide()
        self._unlisten()

    # -- following the predictions -------------------------------------------------------
    def _unhook(self) -> None:
        for emitter, cb in self._hooks:
            try:
                emitter.disconnect(cb)
            except (TypeError, RuntimeError, ValueError):
                pass
        self._hooks = []

    def _rehook(self, *layers: Any) -> None:
        self._unhook()
        for layer in layers:
            self._hooks += [
                (layer.events.paint, self._on_paint),
                (layer.events.data, self._on_data),
            ]
        for emitter, cb in self._hooks:
            emitter.connect(cb)

    def _on_paint(self, event: Any) -> None:
        # napari emits `paint` before writing some edits (data_setitem): update after it returns
        from qtpy.QtCore import QTimer

        pair = self._arrays()
        n = pair[0].data.shape[0] if pair is not None else 0
        region = touched_slices(getattr(event, "value", None) or [], n)
        scheduled = self._pending is not False
        self._pending = region if self._pending is False else union(self._pending, region)
        if not scheduled:
            QTimer.singleShot(0, self._flush)

    def _flush(self) -> None:
        region, self._pending = self._pending, False
        if region is False or not self.shown:
            return
        pair = self._arrays()
        if pair is None or self.layer.data.shape != pair[0].data.shape:
            self.hide()
            return
        if region is None:
            self.show()
            return
        disagreement(pair[0].data, pair[1].data, region=region, out=self.layer.data)
        self.layer.refresh()

    def _on_data(self, event: Any = None) -> None:
        if self.shown:
            self.show()

    def _on_state(self) -> None:
        if self.shown:
            self.show()


def set_outlines(layers: Iterable[Any], on: bool, width: int = 2) -> None:
    """Draw Labels layers as outlines (napari's ``contour``) or filled again."""
    for layer in layers:
        if layer is not None:
            layer.contour = int(width) if on else 0
