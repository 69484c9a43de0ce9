"""Shared state of the napari-segeval panels: a plain object passed to each panel (given none,
they share the viewer's: :func:`shared_state`, docs/design.md)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from psygnal import Signal, SignalGroup
from qtpy.QtCore import QTimer
from qtpy.QtWidgets import QWidget

from napari_segeval._names import CLEAN, unnamed_structures

#: The conditions of the viewer's two predictions: the keys of :attr:`ViewerState.predictions`.
CONDITIONS = (CLEAN, "attacked")


class StateEvents(SignalGroup):
    """One signal per :class:`ViewerState` field that changes (``reference``: or the case)."""

    image = Signal()
    reference = Signal()
    clean = Signal()
    attacked = Signal()
    attacked_image = Signal()
    model = Signal()
    uncertainty = Signal()
    risk = Signal()
    current = Signal()


@dataclass
class ViewerState:
    """Which layers form the case being evaluated, and what the panels found out about it.

    ``model``/``model_key``/``model_kind``: the clean prediction's model, what loaded it, its
    kind; ``prompts``: the last propagation's sets; ``window``: the model's CT window (None:
    the backend's); ``uncertainty``/``risk``: per structure, emptied with a new clean
    prediction; ``counted``: worker-made ``LiveMetrics`` for :meth:`set_case`'s layers.
    """

    image: Any = None
    reference: Any = None
    predictions: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(CONDITIONS))
    structures: dict[int, str] = field(default_factory=dict)
    current: int | None = None
    boxes: Any = None
    points: Any = None
    model: Any = None
    model_key: tuple | None = None
    model_kind: str | None = None
    prompts: dict = field(default_factory=dict)
    window: str | None = None
    uncertainty: dict[int, float] = field(default_factory=dict)
    risk: dict[int, Any] = field(default_factory=dict)
    counted: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    attacked_image: Any = None
    events: StateEvents = field(default_factory=StateEvents, repr=False, compare=False)

    def _change(self, name: str, value: Any) -> None:
        """Set field ``name`` and emit its signal, unless it already holds ``value``."""
        if value is not getattr(self, name):
            setattr(self, name, value)
            self.events[name].emit()

    def set_image(self, layer: Any) -> None:
        self._change("image", layer)

    def set_reference(self, layer: Any) -> None:
        """Choose the reference layer and read its structure names."""
        if layer is self.reference:
            return
        self.reference = layer
        self.structures = structures_of(layer)
        if self.current not in self.structures:
            self.current = next(iter(self.structures), None)
        self.events.reference.emit()

    def set_prediction(self, condition: str, layer: Any) -> None:
        """Choose the prediction layer of ``condition`` (``"clean"`` or ``"attacked"``)."""
        if condition not in CONDITIONS:
            raise ValueError(f"condition must be one of {CONDITIONS}, got {condition!r}")
        if layer is not self.predictions.get(condition):
            self.predictions[condition] = layer
            if condition == CLEAN:
                self.uncertainty, self.risk = {}, {}
            self.events[condition].emit()

    def layer(self, role: str) -> Any:
        """The layer of ``role``: ``"image"``, ``"reference"`` or a condition's prediction."""
        return self.predictions.get(role) if role in CONDITIONS else getattr(self, role)

    def set_layer(self, role: str, layer: Any) -> None:
        """Choose the layer of ``role`` (``"image"``, ``"reference"`` or a condition)."""
        if role in CONDITIONS:
            self.set_prediction(role, layer)
        else:
            getattr(self, f"set_{role}")(layer)

    def set_attacked_image(self, layer: Any) -> None:
        """Choose the perturbed image layer that goes with the attacked prediction."""
        self._change("attacked_image", layer)

    def set_model(self, model: Any, key: tuple | None, kind: str) -> None:
        """Remember the model that produced the clean prediction (``kind``: promptable/dense)."""
        if kind not in ("promptable", "dense"):
            raise ValueError(f"kind must be 'promptable' or 'dense', got {kind!r}")
        self.model, self.model_key, self.model_kind = model, key, kind
        self.events.model.emit()

    def set_uncertainty(self, scores: dict[int, float]) -> None:
        self.uncertainty = {int(k): float(v) for k, v in scores.items()}
        self.events.uncertainty.emit()

    def set_risk(self, risks: dict[int, Any]) -> None:
        """Store each structure's :class:`~napari_segeval.uncertainty.risk.StructureRisk`."""
        self.risk = {int(k): v for k, v in risks.items()}
        self.events.risk.emit()

    def set_case(
        self,
        image: Any,
        reference: Any,
        predictions: dict[str, Any],
        current: int | None = None,
        counted: dict | None = None,
        attacked_image: Any = None,
    ) -> None:
        """Choose every layer of a case at once, with one ``events.reference``; ``counted``:
        the ``LiveMetrics`` of these arrays by condition, for the Dice panel."""
        self.counted = dict(counted or {})
        self.attacked_image = attacked_image
        self.image = image
        self.reference = reference
        # without a reference (a run without labels) the names are the prediction's
        self.structures = structures_of(
            reference if reference is not None else predictions.get(CLEAN)
        )
        self.predictions = {c: predictions.get(c) for c in CONDITIONS}
        self.uncertainty, self.risk = {}, {}
        self.current = current if current in self.structures else next(iter(self.structures), None)
        self.events.reference.emit()
        self.counted = {}  # not taken now: stale once the arrays are edited

    def set_current(self, label: int | None) -> None:
        if label != self.current:
            self.current = label
            self.events.current.emit()

    def geometry(self):
        """:class:`~napari_segeval.io.Geometry` of the case, from layer metadata or scale."""
        from napari_segeval.io import Geometry

        if geometry := self._meta("geometry"):
            return Geometry.from_dict(geometry)
        layer = self.reference if self.reference is not None else self.image
        if layer is None:
            return None
        ndim = _spatial_ndim(layer)
        return Geometry.identity(ndim, tuple(float(s) for s in layer.scale[-ndim:]))

    def spacing(self) -> tuple[float, ...] | None:
        """Voxel spacing in mm per array axis (None without layers)."""
        return None if (g := self.geometry()) is None else tuple(g.spacing)

    def _meta(self, key: str) -> Any:
        """The first non-empty ``metadata[key]`` of the image, then the reference."""
        for layer in (self.image, self.reference):
            if value := (getattr(layer, "metadata", None) or {}).get(key):
                return value
        return None

    def modality(self) -> str:
        """Modality recorded by the reader (``"other"`` when unknown)."""
        return str(self._meta("modality") or "other")

    def axes(self) -> str:
        """Array axes of the case (``"zyx"``, ``"tyx"``, ``"yx"``, ``"yxc"``, ...)."""
        if axes := self._meta("axes"):
            return str(axes)
        layer = self.reference if self.reference is not None else self.image
        return "" if layer is None else {2: "yx", 3: "zyx"}.get(layer.ndim, "")

    def kind(self) -> str:
        """``"volume"``, ``"video"``, ``"series"`` (``tzyx``, :data:`SERIES_HINT`), ``"image"``."""
        from napari_segeval.io.case import kind_of_axes

        try:
            return kind_of_axes(self.axes())
        except ValueError:  # no layer, or axes no reader writes: a plain image
            return "image"

    def to_case(self):
        """A :class:`~napari_segeval.io.Case` of the current layers (arrays shared)."""
        from napari_segeval.io import Case

        if self.image is None:
            return None
        ref = None if self.reference is None else np.asarray(self.reference.data)
        return Case(
            np.asarray(self.image.data),
            self.geometry(),
            axes=self.axes(),
            modality=self.modality(),
            labels=ref,
            structures=dict(self.structures),
        )


#: What the segmenting panels say about a time series of volumes.
SERIES_HINT = (
    "the image is a time series of volumes: take the volume shown as its own "
    "layers first (Prompt tab: 'Take the volume shown'), then prompt, segment or "
    "attack that volume"
)


#: Viewer -> weak reference to the ViewerState its panels share (both held weakly).
_SHARED: weakref.WeakKeyDictionary[Any, weakref.ref[ViewerState]] = weakref.WeakKeyDictionary()


def shared_state(viewer: Any) -> ViewerState:
    """The :class:`ViewerState` shared by the panels of ``viewer`` while a panel holds it."""
    ref = _SHARED.get(viewer)
    state = None if ref is None else ref()
    if state is None:
        state = ViewerState()
        _SHARED[viewer] = weakref.ref(state)
    return state


class Panel(QWidget):
    """A widget of ``napari_viewer``'s panels, sharing ``state`` (given none, the viewer's)."""

    def __init__(self, napari_viewer: Any, state: ViewerState | None = None) -> None:
        super().__init__()
        self.viewer = napari_viewer
        self.state = state if state is not None else shared_state(napari_viewer)


def structures_of(layer: Any) -> dict[int, str]:
    """Structure names of a Labels layer: metadata, then the features table, then ids."""
    if layer is None:
        return {}
    meta = getattr(layer, "metadata", None) or {}
    names = {int(k): str(v) for k, v in (meta.get("structures") or {}).items() if int(k) != 0}
    if names:
        return dict(sorted(names.items()))
    features = getattr(layer, "features", None)
    if features is not None and "index" in features and "name" in features:
        found = {int(i): str(n) for i, n in zip(features["index"], features["name"]) if int(i)}
        if found:
            return dict(sorted(found.items()))
    from napari_segeval._layer_data import present_ids

    return unnamed_structures(present_ids(layer.data))


def _spatial_ndim(layer: Any) -> int:
    """The layer's dimensions without an RGB channel axis."""
    return layer.ndim - (1 if getattr(layer, "rgb", False) else 0)


def current_index(viewer: Any, layer: Any) -> int | None:
    """Index along the layer's axis 0 of the slice shown in the viewer (None for 2D layers)."""
    if layer is None or _spatial_ndim(layer) < 3:
        return None
    world = np.asarray(viewer.dims.point)[-layer.ndim :]
    return round(float(layer.world_to_data(world)[0]))


def go_to_index(viewer: Any, layer: Any, index: int) -> None:
    """Show slice/frame ``index`` (along the layer's axis 0) in the viewer."""
    if layer is None or _spatial_ndim(layer) < 3:
        return
    point = np.zeros(layer.ndim)
    point[0] = index
    world = layer.data_to_world(point)
    viewer.dims.set_point(viewer.dims.ndim - layer.ndim, float(world[0]))


def listen(pairs: Iterable[tuple[Any, Callable[..., Any]]]) -> Callable[[], None]:
    """Connect each ``(signal, slot)`` pair; returns the function that disconnects them."""
    pairs = list(pairs)
    for signal, slot in pairs:
        signal.connect(slot)

    def stop() -> None:
        for signal, slot in pairs:
            signal.disconnect(slot)

    return stop


def restartable_timer(parent: Any, ms: int, slot: Callable[[], Any]) -> QTimer:
    """A single-shot timer calling ``slot`` ``ms`` after its last ``start()``."""
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.setInterval(ms)
    timer.timeout.connect(slot)
    return timer
