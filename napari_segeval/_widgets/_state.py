"""Shared state of the napari-segeval panels: a plain object passed to each panel.

A :class:`ViewerState` holds which layers form the case (image, reference,
predictions) and what the panels found out about it. Its ``events`` (a psygnal
:class:`StateEvents` group: one signal per thing that changes) tell the panels;
psygnal holds a panel's bound methods weakly, so a shared state never keeps a
closed panel alive.

How panels share it
-------------------
napari builds each dock widget of the manifest (*Case*, *Evaluate*) on its own,
handing it only the viewer. So that choosing an image in one panel is seen by
the other, a panel given no state asks :func:`shared_state` for the viewer's:
a registry maps each viewer to its state, both held **weakly**
(``WeakKeyDictionary[viewer, weakref.ref(ViewerState)]``):

* the key is weak, so the registry never keeps a closed viewer (and its Qt
  window) alive;
* the value is weak because every panel holds its state and its viewer
  (``panel.state``, ``panel.viewer``); a strong value would keep the viewer
  alive through its own panels. The state lives as long as one panel uses it;
  a panel opened after all others were closed starts a fresh state.

There is no module-level instance and nothing else global: the state stays a
plain object, and a test or a script may pass its own (``SegEvalWidget(viewer,
state=ViewerState())``), which then is private to the panels given it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from psygnal import Signal, SignalGroup

from napari_segeval._names import CLEAN, unnamed_structures

#: The conditions of the viewer's two predictions: the keys of :attr:`ViewerState.predictions`.
CONDITIONS = (CLEAN, "attacked")


class StateEvents(SignalGroup):
    """The signals of a :class:`ViewerState`: one per field that changes, without arguments.

    ``clean`` and ``attacked`` say that prediction changed; ``reference`` says the
    reference, or the whole case (:meth:`ViewerState.set_case`), changed.
    """

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
    """Which layers form the case being evaluated, and the structures in it.

    Attributes
    ----------
    image : napari.layers.Image or None
    reference : napari.layers.Labels or None
        Reference labels.
    predictions : dict
        ``{"clean": Labels or None, "attacked": Labels or None}``.
    structures : dict of int to str
        Structure ids and names (from the reference layer's metadata/features).
    current : int or None
        The structure the panels focus on (per-slice plot, overlay, prompts).
    boxes : napari.layers.Shapes or None
        Box prompts (features ``label``, ``order``; see
        :mod:`~napari_segeval._widgets.prompt.layers`).
    points : napari.layers.Points or None
        Point prompts (features ``label``, ``order``, ``positive``).
    model : object or None
        The model that produced the clean prediction (promptable or dense), with
        ``model_key`` (what loaded it) and ``model_kind``.
    model_kind : {"promptable", "dense"} or None
        Which kind :attr:`model` is: the *Attack* panel attacks a promptable model
        through its box prompts, a dense model through its sliding window.
    prompts : dict of int to PromptSet
        The prompt sets of the last propagation (reused by attacks and uncertainty).
    window : str or None
        CT window preset for model preprocessing (None: the backend's default).
    uncertainty : dict of int to float
        Per-structure uncertainty score (mean entropy over the structure and its
        boundary band) of the clean prediction, set by the
        Uncertainty action; emptied when the clean prediction is replaced.
    attacked_image : napari.layers.Image or None
        The perturbed image of the attacked prediction, set by the *Attack* panel
        and the results browser (compare mode shows it in its third view).
    risk : dict of int to StructureRisk
        The estimated risk of failure of each structure of the prediction shown, per
        slice (:class:`~napari_segeval.uncertainty.risk.StructureRisk`: a results
        folder's, set by the results browser, or a propagation's, set by the Prompt
        tab); emptied when the case or the clean prediction changes.
    counted : dict of str to LiveMetrics
        Counters a worker made for the case set by :meth:`set_case`, waiting for
        the Dice panel to adopt them (:meth:`take_counted`).
    events : StateEvents
        Emitted after each change.
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

    # -- setters -----------------------------------------------------------------------
    def set_image(self, layer: Any) -> None:
        """Choose the image layer."""
        if layer is not self.image:
            self.image = layer
            self.events.image.emit()

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

    def set_attacked_image(self, layer: Any) -> None:
        """Choose the perturbed image layer that goes with the attacked prediction."""
        if layer is not self.attacked_image:
            self.attacked_image = layer
            self.events.attacked_image.emit()

    def set_model(self, model: Any, key: tuple | None, kind: str) -> None:
        """Remember the model that produced the clean prediction (``kind``: promptable/dense)."""
        if kind not in ("promptable", "dense"):
            raise ValueError(f"kind must be 'promptable' or 'dense', got {kind!r}")
        self.model, self.model_key, self.model_kind = model, key, kind
        self.events.model.emit()

    def set_uncertainty(self, scores: dict[int, float]) -> None:
        """Store per-structure uncertainty scores of the clean prediction."""
        self.uncertainty = {int(k): float(v) for k, v in scores.items()}
        self.events.uncertainty.emit()

    def set_risk(self, risks: dict[int, Any]) -> None:
        """Store the risk of each structure of the clean prediction
        (:class:`~napari_segeval.uncertainty.risk.StructureRisk` by label)."""
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
        """Choose every layer of a case at once (the results browser's case swap).

        Panels hear one ``events.reference`` (on which they re-read the whole
        case), not one per layer: the Dice panel recounts once, or adopts the
        ``counted`` counters (condition -> :class:`~napari_segeval.metrics.LiveMetrics`
        of these very arrays, made in a worker thread; see :meth:`take_counted`).
        """
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

    def take_counted(self, condition: str) -> Any:
        """The counter made in a worker for ``condition``'s layers (once; None if none)."""
        return self.counted.pop(condition, None)

    def set_current(self, label: int | None) -> None:
        """Focus on structure ``label``."""
        if label != self.current:
            self.current = label
            self.events.current.emit()

    # -- derived -----------------------------------------------------------------------
    def geometry(self):
        """:class:`~napari_segeval.io.Geometry` of the case, from layer metadata or scale."""
        from napari_segeval.io import Geometry

        for layer in (self.image, self.reference):
            if layer is None:
                continue
            meta = getattr(layer, "metadata", {}) or {}
            if meta.get("geometry"):
                return Geometry.from_dict(meta["geometry"])
        layer = self.reference if self.reference is not None else self.image
        if layer is None:
            return None
        ndim = layer.ndim - (1 if getattr(layer, "rgb", False) else 0)
        return Geometry.identity(ndim, tuple(float(s) for s in layer.scale[-ndim:]))

    def spacing(self) -> tuple[float, ...] | None:
        """Voxel spacing in mm per array axis (None without layers)."""
        g = self.geometry()
        return None if g is None else tuple(g.spacing)

    def modality(self) -> str:
        """Modality recorded by the reader (``"other"`` when unknown)."""
        for layer in (self.image, self.reference):
            meta = getattr(layer, "metadata", None) or {}
            if meta.get("modality"):
                return str(meta["modality"])
        return "other"

    def axes(self) -> str:
        """Array axes of the case (``"zyx"``, ``"tyx"``, ``"yx"``, ``"yxc"``, ...)."""
        for layer in (self.image, self.reference):
            meta = getattr(layer, "metadata", None) or {}
            if meta.get("axes"):
                return str(meta["axes"])
        layer = self.reference if self.reference is not None else self.image
        if layer is None:
            return ""
        return {2: "yx", 3: "zyx"}.get(layer.ndim, "")

    def kind(self) -> str:
        """``"volume"``, ``"video"``, ``"series"`` (volumes over time, ``tzyx``) or ``"image"``.

        A series (4D NIfTI: cine MR, fMRI, DWI) is neither a video nor a volume:
        the panels that segment work on one of its volumes (see
        :data:`SERIES_HINT`).
        """
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


#: Viewer -> weak reference to the ViewerState its panels share (see the module docstring).
_SHARED: weakref.WeakKeyDictionary[Any, weakref.ref[ViewerState]] = weakref.WeakKeyDictionary()


def shared_state(viewer: Any) -> ViewerState:
    """The :class:`ViewerState` shared by the panels of ``viewer`` (made on first use).

    Parameters
    ----------
    viewer : napari.Viewer
        Any weak-referenceable, hashable object (napari viewers hash by identity).

    Returns
    -------
    ViewerState
        The same object for every call with one viewer while a panel holds it.

    Examples
    --------
    >>> class Viewer:  # stands in for napari.Viewer
    ...     pass
    >>> v, w = Viewer(), Viewer()
    >>> state = shared_state(v)
    >>> shared_state(v) is state, shared_state(w) is state
    (True, False)
    """
    ref = _SHARED.get(viewer)
    state = None if ref is None else ref()
    if state is None:
        state = ViewerState()
        _SHARED[viewer] = weakref.ref(state)
    return state


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


def current_index(viewer: Any, layer: Any) -> int | None:
    """Index along the layer's axis 0 of the slice shown in the viewer (None for 2D layers)."""
    if layer is None or layer.ndim - (1 if getattr(layer, "rgb", False) else 0) < 3:
        return None
    world = np.asarray(viewer.dims.point)[-layer.ndim :]
    return round(float(layer.world_to_data(world)[0]))


def go_to_index(viewer: Any, layer: Any, index: int) -> None:
    """Show slice/frame ``index`` (along the layer's axis 0) in the viewer."""
    if layer is None or layer.ndim - (1 if getattr(layer, "rgb", False) else 0) < 3:
        return
    point = np.zeros(layer.ndim)
    point[0] = index
    world = layer.data_to_world(point)
    viewer.dims.set_point(viewer.dims.ndim - layer.ndim, float(world[0]))


def listen(pairs: Iterable[tuple[Any, Callable[..., Any]]]) -> Callable[[], None]:
    """Connect each ``(signal, slot)`` pair; returns the function that disconnects them.

    psygnal holds a bound method (or a partial of one) weakly: a panel that is
    gone stops hearing by itself; the returned function stops a panel that closes.
    """
    pairs = list(pairs)
    for signal, slot in pairs:
        signal.connect(slot)

    def stop() -> None:
        for signal, slot in pairs:
            signal.disconnect(slot)

    return stop
