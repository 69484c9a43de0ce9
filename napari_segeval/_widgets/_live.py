"""A propagation you can watch: its slices drawn in a Labels layer as they are computed.

:func:`napari_segeval.propagation.propagate_case` reports each structure's mask on
each slice through ``on_slice(label, index, mask)``, from the worker thread. The
panel relays it to :meth:`LiveLabels.paint` on the main thread (``JobRunner.start(...,
relay={"on_slice": live.paint})``: the job runner drops the reports of a job that
was cancelled, closed or lost its image), which paints it into a *partial* Labels
layer on the reference's grid and colours. When the job ends, :meth:`LiveLabels.stop`
removes that layer: the final merged prediction replaces it (on success), or
nothing is left of it (cancel, error, a closed panel).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class LiveLabels:
    """The partial layer of one running propagation at a time.

    Attributes
    ----------
    layer : napari.layers.Labels or None
        The partial layer while a run paints into it (made at its first report).
    updates : int
        Number of reports painted in the current run.
    """

    def __init__(self, viewer: Any, state: Any,
                 make_layer: Callable[[Any, Any, np.ndarray, str], Any]) -> None:
        self.viewer, self.state = viewer, state
        #: ``make_layer(viewer, state, data, name)`` adds the partial Labels layer
        #: (:func:`napari_segeval._widgets.prompt.prediction_layer`)
        self.make_layer = make_layer
        self.layer: Any = None
        self.updates = 0
        self._active = False
        self._name = ""
        self._shape: tuple[int, ...] = ()

    def start(self, name: str, shape: tuple[int, ...]) -> Callable[[int, int, np.ndarray], None]:
        """Begin a run painting into a new layer ``name`` of ``shape``; returns :meth:`paint`.

        Call the returned function on the main thread only (relay it there).
        """
        self.stop()
        self._active, self._name, self._shape = True, name, tuple(shape)
        self.updates = 0
        return self.paint

    def stop(self) -> None:
        """End the run: later reports are ignored and the partial layer is removed."""
        self._active = False
        layer, self.layer = self.layer, None
        if layer is not None and layer in self.viewer.layers:
            self.viewer.layers.remove(layer)

    def _make_layer(self) -> Any:
        data = np.zeros(self._shape, np.uint16 if max(self.state.structures, default=0) > 255
                        else np.uint8)
        layer = self.make_layer(self.viewer, self.state, data, self._name)
        layer.metadata["partial"] = True
        return layer

    def paint(self, label: int, index: int, mask: np.ndarray) -> None:
        """Paint structure ``label``'s ``mask`` on slice ``index`` (ignored after :meth:`stop`)."""
        if not self._active:
            return
        mask = np.asarray(mask, dtype=bool)
        if self.layer is None or self.layer not in self.viewer.layers:
            self.layer = self._make_layer()
        data = self.layer.data
        plane = data if data.ndim == mask.ndim else data[index]
        if plane.shape != mask.shape:
            return
        plane[(plane == label) & ~mask] = 0
        plane[mask] = label
        self.layer.refresh()
        self.updates += 1
