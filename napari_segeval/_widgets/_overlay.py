"""The FP/FN overlay layer of the current structure (false positives / false negatives)."""

from __future__ import annotations

from typing import Any

from napari_segeval._widgets._state import ViewerState
from napari_segeval._widgets.overlays import FALSE_NEGATIVE, FALSE_POSITIVE, error_overlay

#: Colours of the overlay values.
OVERLAY_COLOURS = {FALSE_POSITIVE: "magenta", FALSE_NEGATIVE: "cyan"}
LAYER_NAME = "errors (FP magenta, FN cyan)"


class ErrorOverlay:
    """Keeps one Labels layer marking where a prediction disagrees with the reference."""

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        self.viewer = viewer
        self.state = state
        self.layer: Any = None
        self.condition = "clean"

    def _arrays(self, condition: str):
        ref, pred = self.state.reference, self.state.predictions.get(condition)
        if ref is None or pred is None or self.state.current is None:
            return None
        if ref.data.shape != pred.data.shape:
            return None
        return ref.data, pred.data

    def show(self, condition: str) -> Any:
        """Create (or update) the overlay layer for ``condition`` and the current structure."""
        from napari.utils.colormaps import DirectLabelColormap

        self.condition = condition
        arrays = self._arrays(condition)
        if arrays is None:
            self.hide()
            return None
        data = error_overlay(arrays[0], arrays[1], int(self.state.current))
        if self.layer is None or self.layer not in self.viewer.layers:
            ref = self.state.reference
            colormap = DirectLabelColormap(color_dict={**OVERLAY_COLOURS, None: "transparent"})
            self.layer = self.viewer.add_labels(
                data, name=LAYER_NAME, scale=ref.scale, translate=ref.translate,
                colormap=colormap, opacity=0.8, blending="translucent_no_depth",
            )
            self.layer.editable = False
        else:
            self.layer.data = data
        return self.layer

    def hide(self) -> None:
        """Remove the overlay layer."""
        if self.layer is not None and self.layer in self.viewer.layers:
            self.viewer.layers.remove(self.layer)
        self.layer = None

    @property
    def shown(self) -> bool:
        """True while the overlay layer is in the viewer."""
        return self.layer is not None and self.layer in self.viewer.layers

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
        error_overlay(arrays[0], arrays[1], int(self.state.current), region=region,
                      out=self.layer.data)
        self.layer.refresh()
