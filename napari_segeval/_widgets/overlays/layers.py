"""The overlay layers in the viewer: FP/FN, clean vs attacked disagreement, outlines."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from functools import reduce
from typing import Any

import numpy as np

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

#: Colours of the overlay values (those of the clicks that would fix them), None the rest.
OVERLAY_COLOURS: dict[int | None, str] = {
    FALSE_POSITIVE: colours.NEGATIVE_COLOUR,
    FALSE_NEGATIVE: colours.POSITIVE_COLOUR,
    None: "transparent",
}
LAYER_NAME = "errors (FP magenta, FN green)"
#: Colours of the disagreement values (lost under attack, gained, changed structure).
DISAGREEMENT_COLOURS: dict[int | None, str] = {
    LOST: colours.DISAGREEMENT_COLOURS["lost"],
    GAINED: colours.DISAGREEMENT_COLOURS["gained"],
    CHANGED: colours.DISAGREEMENT_COLOURS["changed"],
    None: "transparent",
}
DISAGREEMENT_NAME = "disagreement (lost red, gained blue, changed yellow)"


class _Overlay(ABC):
    """One read-only Labels layer over the case on :meth:`pair`'s first layer's grid; while
    shown it follows the pair (a paint stroke recomputes the slices it touched)."""

    name = ""
    palette: dict[int | None, str] = {}
    opacity = 0.8

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        self.viewer = viewer
        self.state = state
        self.layer: Any = None
        self._unhook: Callable[[], None] = lambda: None
        self._pending: list[slice | None] = []  # the edits of an update scheduled

    @abstractmethod
    def pair(self) -> tuple[Any, Any] | None:
        """The two layers compared (of one shape), or None."""

    def marks(
        self, a: np.ndarray, b: np.ndarray, region: slice | None = None, out: Any = None
    ) -> np.ndarray:
        """The overlay's values from the pair's arrays (``region``/``out``: a partial update):
        :func:`disagreement` of every structure."""
        return disagreement(a, b, region=region, out=out)

    @property
    def shown(self) -> bool:
        return self.layer is not None and self.layer in self.viewer.layers

    def show(self) -> Any:
        """Create (or recompute) the layer; None (and no layer) without a pair to compare."""
        from napari.utils.colormaps import DirectLabelColormap

        pair = self.pair()
        if pair is None:
            self.hide()
            return None
        data = self.marks(pair[0].data, pair[1].data)
        self._unhook()
        events = [ly.events for ly in pair]
        self._unhook = listen(
            [(e.paint, self._on_paint) for e in events] + [(e.data, self.refresh) for e in events]
        )
        if self.shown:
            self.layer.data = data
            return self.layer
        self.layer = self.viewer.add_labels(
            data,
            name=self.name,
            scale=pair[0].scale,
            translate=pair[0].translate,
            colormap=DirectLabelColormap(color_dict=self.palette),
            opacity=self.opacity,
            blending="translucent_no_depth",
        )
        self.layer.editable = False
        return self.layer

    def refresh(self) -> None:
        """Recompute the whole layer while it is shown (structure or layers changed)."""
        if self.shown:
            self.show()

    def hide(self) -> None:
        """Remove the layer and stop following the pair."""
        self._unhook()
        self._unhook = lambda: None
        if self.shown:
            self.viewer.layers.remove(self.layer)
        self.layer = None

    def _on_paint(self, event: Any) -> None:
        # napari emits `paint` before writing some edits (data_setitem): update after it returns
        from qtpy.QtCore import QTimer

        pair = self.pair()
        n = pair[0].data.shape[0] if pair is not None else 0
        if not self._pending:
            QTimer.singleShot(0, self._flush)
        self._pending.append(touched_slices(getattr(event, "value", None) or [], n))

    def _flush(self) -> None:
        """Recompute the slices the edits touched (everything for an unknown region)."""
        regions, self._pending = self._pending, []
        if not regions or not self.shown:
            return
        region, pair = reduce(union, regions), self.pair()
        if pair is None or self.layer.data.shape != pair[0].data.shape:
            self.hide()
        elif region is None:
            self.show()
        else:
            self.marks(pair[0].data, pair[1].data, region=region, out=self.layer.data)
            self.layer.refresh()


def _same_shape(a: Any, b: Any) -> tuple[Any, Any] | None:
    """``(a, b)`` when both layers are there with arrays of one shape, else None."""
    return (a, b) if a is not None and b is not None and a.data.shape == b.data.shape else None


def set_outlines(layers: Iterable[Any], on: bool) -> None:
    """Draw Labels layers as outlines (napari's ``contour``, 2 pixels) or filled again."""
    for layer in (ly for ly in layers if ly is not None):
        layer.contour = 2 if on else 0


class ErrorOverlay(_Overlay):
    """Where the prediction of ``condition`` disagrees with the reference (current structure)."""

    name, palette = LAYER_NAME, OVERLAY_COLOURS

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        super().__init__(viewer, state)
        self.condition = CLEAN

    def pair(self) -> tuple[Any, Any] | None:
        """The reference and the prediction of ``condition`` (None without a structure)."""
        if self.state.current is None:
            return None
        return _same_shape(self.state.reference, self.state.predictions.get(self.condition))

    def marks(
        self, a: np.ndarray, b: np.ndarray, region: slice | None = None, out: Any = None
    ) -> np.ndarray:
        """:func:`error_overlay` of the current structure."""
        return error_overlay(a, b, int(self.state.current or 0), region=region, out=out)


class DisagreementOverlay(_Overlay):
    """Where the clean and attacked predictions differ (recomputed with a new prediction)."""

    name, palette, opacity = DISAGREEMENT_NAME, DISAGREEMENT_COLOURS, 0.9

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        super().__init__(viewer, state)
        ev = state.events
        self._unlisten = listen((s, self.refresh) for s in (ev.clean, ev.attacked, ev.reference))

    def pair(self) -> tuple[Any, Any] | None:
        predictions = self.state.predictions
        return _same_shape(predictions.get(CLEAN), predictions.get("attacked"))

    def close(self) -> None:
        """Hide and stop listening to the state."""
        self.hide()
        self._unlisten()
