"""A propagation you can watch: its slices drawn in a partial Labels layer as computed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from napari_segeval._widgets._layers import prediction_layer


class LiveLabels:
    """The partial layer of one running propagation at a time (``updates``: reports painted)."""

    def __init__(self, viewer: Any, state: Any) -> None:
        self.viewer, self.state = viewer, state
        self.layer: Any = None
        self.updates = 0
        self._active = False
        self._name = ""
        self._shape: tuple[int, ...] = ()
        self._base: np.ndarray | None = None
        self._clear: list[int] = []
        self._hidden: Any = None

    def start(
        self,
        name: str,
        shape: tuple[int, ...],
        base: np.ndarray | None = None,
        clear: Sequence[int] = (),
        hide: Any = None,
    ) -> Callable[[int, int, np.ndarray], None]:
        """Begin a run painting into a new layer ``name`` of ``shape``; returns :meth:`paint`
        (main thread only). The layer starts from ``base`` less ``clear``; ``hide`` meanwhile."""
        self.stop()
        self._active, self._name, self._shape = True, name, tuple(shape)
        self._base = None if base is None or tuple(base.shape) != self._shape else base
        self._clear = [int(v) for v in clear]
        self._hidden = hide
        self.updates = 0
        return self.paint

    def stop(self) -> None:
        """End the run: the partial layer goes, the hidden layer shows again."""
        self._active = False
        self._base = None
        layer, self.layer = self.layer, None
        if layer is not None and layer in self.viewer.layers:
            self.viewer.layers.remove(layer)
        hidden, self._hidden = self._hidden, None
        if layer is not None and hidden is not None and hidden in self.viewer.layers:
            hidden.visible = True

    def _make_layer(self) -> Any:
        dtype = np.uint16 if max(self.state.structures, default=0) > 255 else np.uint8
        if self._base is None:
            data = np.zeros(self._shape, dtype)
        else:
            data = np.asarray(self._base).astype(dtype, copy=True)
            if self._clear:
                data[np.isin(data, self._clear)] = 0
        hidden = self._hidden
        if hidden is not None and hidden in self.viewer.layers:
            if hidden.visible:
                hidden.visible = False
            else:
                self._hidden = None  # the person hid it: leave it hidden
        layer = prediction_layer(self.viewer, self.state, data, self._name)
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
