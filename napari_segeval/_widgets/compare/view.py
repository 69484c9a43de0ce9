"""Compare mode: clean and attacked side by side in three canvases linked to the viewer.

napari's grid mode cannot show *image + reference* beside *image + prediction*; these
``ViewerModel`` canvases mirror the main layers read-only, linked both ways."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from functools import partial
from typing import Any

from qtpy.QtWidgets import QCheckBox, QHBoxLayout, QLabel

from napari_segeval._names import CLEAN
from napari_segeval._widgets._form import hbox, text_line, vbox
from napari_segeval._widgets._state import CONDITIONS, Panel, ViewerState, listen, restartable_timer
from napari_segeval._widgets.colours import ColourLanguage, legend_html
from napari_segeval._widgets.jobs.worker import run_guarded, show_info
from napari_segeval._widgets.overlays.layers import DisagreementOverlay, set_outlines

#: The three views: key, title.
PANES = (
    ("reference", "image + reference"),
    (CLEAN, "image + clean prediction"),
    ("attacked", "attacked image + attacked prediction"),
)
#: (component, attribute) pairs linked between the main viewer and the views.
LINKS = (
    ("dims", "ndisplay"),
    ("dims", "order"),
    ("dims", "point"),
    ("camera", "center"),
    ("camera", "zoom"),
    ("camera", "angles"),
    ("cursor", "position"),
)
#: Minimum height of the views in pixels (a dock would otherwise open squashed).
MIN_HEIGHT = 340
#: Delay before the first fit, once the dock is laid out.
FIT_DELAY_MS = 150
COMPARE_TIP = (
    "reference, clean and attacked predictions side by side in linked views (slice, zoom, "
    "pan and cursor follow each other)"
)
DISAGREEMENT_TIP = (
    "where the attacked prediction differs from the clean one: red lost under attack, blue "
    "gained, yellow changed"
)
#: Layer attributes the mirrored layers follow (when the layer type has them).
FOLLOWED = ("colormap", "contrast_limits", "gamma", "opacity", "contour", "blending")


def _signature(layers: list) -> list:
    """What a pane's mirror depends on beyond the events it follows (layers, shapes, placement)."""
    return [
        (id(ly), ly, getattr(ly.data, "shape", None), tuple(ly.scale), tuple(ly.translate))
        for ly in layers
    ]


def pane_title(key: str, layer: Any, has_attacked_image: bool) -> str:
    """Title of a view: its prediction's name (``metadata["prediction"]``) when it names a model."""
    from napari_segeval.evaluation.keys import PredictionKey

    prediction = (getattr(layer, "metadata", None) or {}).get("prediction")
    named = isinstance(prediction, PredictionKey) and prediction.model is not None
    if key != "reference" and named:
        shown = "attacked image" if key == "attacked" and has_attacked_image else "image"
        return f"{shown} + {prediction}"
    if key == "attacked" and not has_attacked_image:
        return "image + attacked prediction (no attacked image)"
    return dict(PANES)[key]


def attacked_image(viewer: Any, state: ViewerState) -> Any:
    """``state.attacked_image`` while in the viewer, else the last Image layer of the image's
    shape named ``attacked`` or ``perturbed`` (not ``perturbation``: layers a person opened)."""
    from napari.layers import Image

    image, chosen = state.image, state.attacked_image

    def fits(layer: Any) -> bool:
        return image is None or layer.data.shape == image.data.shape

    if chosen is not None and chosen in viewer.layers and fits(chosen):
        return chosen
    named = [
        ly
        for ly in viewer.layers
        if isinstance(ly, Image) and ly is not image and fits(ly) and _attacked_name(ly.name)
    ]
    return named[-1] if named else None


def _attacked_name(name: str) -> bool:
    name = name.lower()
    return "perturbation" not in name and ("attacked" in name or "perturbed" in name)


def _aligned(value: tuple, ndim: int, current: tuple) -> tuple:
    """``value`` fitted to ``ndim`` trailing axes, keeping ``current`` for the others."""
    return (*current[: max(ndim - len(value), 0)], *value)[-ndim:]


class CompareView(Panel):
    """Three linked canvases docked below the viewer: reference, clean and attacked predictions;
    ``models``: the views' viewer models by :data:`PANES` key, ``sources``: the layers mirrored."""

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        from napari.components import ViewerModel
        from napari.qt import QtViewer

        super().__init__(viewer, state)
        self.models: dict[str, Any] = {}
        self.qt_viewers: dict[str, Any] = {}
        self.titles: dict[str, QLabel] = {}
        self.sources: dict[str, list] = {}
        #: per pane, the connections that keep its mirrored layers following their sources
        self._follow: dict[str, list[tuple[Any, Any]]] = {}
        #: per pane, what it shows (:func:`_signature` of its sources)
        self._shown: dict[str, list] = {}
        self._syncing = False
        self.closed = False
        self.setMinimumHeight(MIN_HEIGHT)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        for key, title in PANES:
            model = ViewerModel(title=title)
            qt = QtViewer(model, show_welcome_screen=False)
            label = QLabel(title)
            row.addLayout(vbox(None, label, qt, stretch=qt), 1)
            self.models[key], self.qt_viewers[key], self.titles[key] = model, qt, label
        self.rebuild()
        self._links: list[tuple[Any, Callable[..., Any]]] = [
            (getattr(getattr(source, comp).events, attr), partial(self._linked, source, comp, attr))
            for source in (viewer, *self.models.values())
            for comp, attr in LINKS
        ]
        self._links += [
            (viewer.layers.events.removed, self._layer_removed),
            (viewer.layers.events.inserted, self._layer_inserted),
        ]
        listen(self._links)
        ev = state.events
        self._unlisten = listen(
            (s, self._on_state)
            for s in (ev.image, ev.reference, ev.attacked_image, ev.clean, ev.attacked)
        )
        self.dock = viewer.window.add_dock_widget(self, name="Compare", area="bottom")
        # once the dock has its size, fit the case in every view (the views are smaller)
        fit = restartable_timer(self, FIT_DELAY_MS, lambda: None if self.closed else self.fit())
        self._fit_timer = fit
        fit.start()

    @staticmethod
    def _disconnect(store: list[tuple[Any, Any]]) -> None:
        for emitter, callback in store:
            emitter.disconnect(callback)
        store.clear()

    @property
    def connections(self) -> int:
        """How many event connections the views hold (0 once closed)."""
        return len(self._links) + sum(len(v) for v in self._follow.values())

    def rebuild(self) -> None:
        """Mirror the case's current layers into the three views and align them (only panes
        whose sources changed: emptying a napari view runs a full garbage collection)."""
        s = self.state
        attacked = attacked_image(self.viewer, s)
        sources = {
            "reference": [s.image, s.reference],
            CLEAN: [s.image, s.predictions.get(CLEAN)],
            "attacked": [s.image if attacked is None else attacked, s.predictions.get("attacked")],
        }
        for key, layers in sources.items():
            present = [ly for ly in layers if ly is not None and ly in self.viewer.layers]
            if self._shown.get(key) != _signature(present):
                self._fill(key, present)
            title = pane_title(key, s.predictions.get(key), attacked is not None)
            missing = key in CONDITIONS and self.state.predictions.get(key) is None
            self.titles[key].setText(f"{title} - none yet" if missing else title)
        self.sync_from(self.viewer)

    def _fill(self, key: str, present: list) -> None:
        """Mirror ``present`` (source layers) into pane ``key``, replacing what it showed."""
        from napari.layers import Image, Layer

        self._disconnect(self._follow.setdefault(key, []))
        model = self.models[key]
        model.layers.clear()
        self.sources[key] = present
        self._shown[key] = _signature(present)
        for src in present:
            data, meta, kind = src.as_layer_data_tuple()
            if isinstance(src, Image):
                meta = {**meta, "visible": True}
            dst = Layer.create(data, meta, kind)
            if not isinstance(dst, Image):
                dst.editable = False
                dst.contour = src.contour  # not in the layer data tuple: the outline
            model.add_layer(dst)
            self._mirror(key, src, dst)

    def _mirror(self, key: str, src: Any, dst: Any) -> None:
        from napari.layers import Image

        def copy(name: str) -> None:
            setattr(dst, name, getattr(src, name))

        names = [n for n in FOLLOWED if hasattr(src.events, n) and hasattr(dst, n)]
        names += ["data"] if isinstance(src, Image) else ["data", "visible"]
        pairs = [(getattr(src.events, name), partial(copy, name)) for name in names]
        if hasattr(src.events, "paint"):
            pairs.append((src.events.paint, dst.refresh))
        self._follow[key] += pairs
        listen(pairs)

    def _on_state(self) -> None:
        if not self.closed:
            run_guarded("compare views", self.rebuild)

    def _layer_removed(self, event: Any) -> None:
        if any(event.value in layers for layers in self.sources.values()):
            self.rebuild()

    def _layer_inserted(self, event: Any) -> None:
        found = attacked_image(self.viewer, self.state)
        if found is not None and found not in self.sources.get("attacked", []):
            self.rebuild()  # an attack (or the results browser) just added the attacked image

    def _linked(self, source: Any, comp: str, attr: str) -> None:
        if self._syncing or self.closed:
            return
        self._syncing = True
        try:
            value = getattr(getattr(source, comp), attr)
            for target in (self.viewer, *self.models.values()):
                if target is not source:
                    self._apply(target, comp, attr, value)
        finally:
            self._syncing = False

    @staticmethod
    def _apply(target: Any, comp: str, attr: str, value: Any) -> None:
        dims = target.dims
        if comp == "camera" or attr == "ndisplay":
            setattr(getattr(target, comp), attr, value)
        elif attr == "order":
            if len(value) == dims.ndim:
                dims.order = tuple(value)
        elif attr == "point":
            dims.set_point(range(dims.ndim), _aligned(value, dims.ndim, dims.point))
        else:
            target.cursor.position = _aligned(value, dims.ndim, target.cursor.position)

    def sync_from(self, source: Any) -> None:
        """Copy ``source``'s slice, camera and cursor to the others."""
        for comp, attr in LINKS:
            self._linked(source, comp, attr)

    def fit(self) -> None:
        """Zoom all canvases so that the case fits in the smallest view (done on opening)."""
        zooms = {}
        for key, model in self.models.items():
            if model.layers:
                model.reset_view()
                zooms[key] = model.camera.zoom
        if zooms:
            self.sync_from(self.models[min(zooms, key=lambda key: zooms[key])])

    def close(self) -> bool:
        """Disconnect every link, close the canvases and remove the dock."""
        if self.closed:
            return True
        self.closed = True
        self._fit_timer.stop()
        for store in (self._links, *self._follow.values()):
            self._disconnect(store)
        self._unlisten()
        for model, qt in zip(self.models.values(), self.qt_viewers.values(), strict=True):
            model.layers.clear()
            qt.close()
        with suppress(LookupError, RuntimeError, ValueError):
            self.viewer.window.remove_dock_widget(self.dock)
        self.qt_viewers, self.models, self.sources, self._shown = {}, {}, {}, {}
        return super().close()


class CompareBar(Panel):
    """The Evaluate widget's display options: compare mode, disagreement, outlines, legend."""

    def __init__(self, viewer: Any, state: ViewerState) -> None:
        super().__init__(viewer, state)
        self.view: CompareView | None = None
        self.overlay = DisagreementOverlay(viewer, state)
        boxes = []
        for what, tip, action in (
            ("compare", COMPARE_TIP, self.set_compare),
            ("disagreement", DISAGREEMENT_TIP, self.set_disagreement),
            ("outlines", "draw the predictions as outlines over the reference", self.outline),
        ):
            box = QCheckBox(what.capitalize())
            box.setToolTip(tip)
            box.toggled.connect(lambda on, w=what, a=action: run_guarded(w, lambda: a(on)))
            boxes.append(box)
        self.compare, self.disagreement, self.outlines = boxes
        self.legend = text_line()
        self.legend.setStyleSheet("font-size: 11px")
        self.legend.setToolTip(
            "the colour language of every view: the reference is an outline, the "
            "clean and attacked predictions are filled; with several structures each "
            "has its colour in every layer"
        )
        self.colours = ColourLanguage(viewer, state)
        vbox(self, hbox(*boxes, 1), self.legend, tight=True)
        self._legend()
        ev = state.events
        self._unlisten = listen(
            [
                (ev.reference, self._new_case),
                (ev.clean, self._new_prediction),
                (ev.attacked, self._new_prediction),
            ]
        )

    def set_compare(self, on: bool) -> CompareView | None:
        if on and self.view is None:
            self.view = CompareView(self.viewer, self.state)
        elif not on and self.view is not None:
            self.view.close()
            self.view = None
        return self.view

    def set_disagreement(self, on: bool) -> Any:
        """Show (or remove) the disagreement layer; unticks itself without a pair."""
        if not on:
            self.overlay.hide()
            return None
        layer = self.overlay.show()
        if layer is None:
            show_info("disagreement needs a clean and an attacked prediction of one shape")
            self.disagreement.setChecked(False)
        return layer

    def outline(self, on: bool) -> None:
        set_outlines(self.state.predictions.values(), on)

    def _legend(self) -> None:
        self.legend.setText(legend_html(self.state.structures))

    def _new_prediction(self) -> None:
        if self.outlines.isChecked():
            self.outline(True)

    def _new_case(self) -> None:
        self._new_prediction()
        self._legend()

    def close(self) -> bool:
        """Close the views and the layer, stop listening."""
        self.set_compare(False)
        self.overlay.close()
        self.colours.close()
        self._unlisten()
        return super().close()
