"""The prompts a person draws: boxes in a Shapes layer, clicks in a Points layer.

Items carry the features ``label`` and ``order``; napari-drawn ones are *settled* on the
next turn of the event loop (docs/design.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from napari_segeval._widgets import colours
from napari_segeval._widgets._state import SERIES_HINT
from napari_segeval._widgets.jobs.worker import run_guarded, show_error
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, Prompt, PromptSet

#: Points are drawn at least this many and at most this many screen pixels wide.
POINT_PX_MIN, POINT_PX_MAX = 9.0, 22.0


@dataclass(frozen=True)
class Item:
    """One prompt as held: ``source`` (boxes, points, masks), ``row`` there, ``order`` given."""

    order: int
    prompt: Prompt
    source: str
    row: int


class PromptLayers:
    """The prompt layers of a viewer's case, and a prompts file's ``masks``."""

    def __init__(self, viewer: Any, state: Any, on_change: Callable[[], None]) -> None:
        self.viewer, self.state, self.on_change = viewer, state, on_change
        self.masks: list[tuple[int, MaskPrompt]] = []
        self._muted = 0
        self._scheduled = False
        self._positive = True

    def grid_layer(self) -> Any:
        """The layer whose array indices the prompts are given in (image, else reference)."""
        layer = self.state.image if self.state.image is not None else self.state.reference
        if layer is None:
            raise ValueError("choose an image layer first")
        if self.state.kind() == "series":
            raise ValueError(SERIES_HINT)
        return layer

    def frame_shape(self) -> tuple[int, int, int]:
        """``(n, H, W)`` of the case's frame stack (``n = 1`` for a 2D image)."""
        layer = self.grid_layer()
        shape = tuple(int(s) for s in layer.data.shape)
        n, h, w = (1, *(shape[:-1] if getattr(layer, "rgb", False) else shape))[-3:]
        return n, h, w

    def where(self) -> str:
        """``"slice"`` (volumes) or ``"frame"`` (videos, 2D images), for messages."""
        return "slice" if self.state.kind() == "volume" else "frame"

    def spatial_ndim(self) -> int:
        """2 for a 2D image, 3 for a volume or a video."""
        return 2 if self.state.kind() == "image" else 3

    def plane_problem(self) -> str | None:
        """Why prompts cannot be drawn in the view shown now (3D view, another plane)."""
        dims = self.viewer.dims
        if dims.ndisplay != 2:
            return "prompts are drawn in the 2D view: switch the viewer back to 2D"
        n = dims.ndim
        if self.spatial_ndim() == 3 and tuple(dims.order[-2:]) != (n - 2, n - 1):
            return (
                "prompts are drawn on the slices of the first array axis: the viewer shows "
                "another plane (reset the dims order)"
            )
        return None

    def _alive(self, layer: Any) -> bool:
        return layer is not None and layer in self.viewer.layers

    def _layer(self, kind: str, create: bool) -> Any:
        """The layer ``kind`` (``"boxes"``, ``"points"``; the state's attribute and its name)."""
        layer = getattr(self.state, kind)
        if self._alive(layer) or not create:
            return layer if self._alive(layer) else None
        grid, ndim = self.grid_layer(), self.spatial_ndim()
        features = {"label": np.zeros(0, int), "order": np.zeros(0, int)}
        place = {
            "ndim": ndim,
            "name": kind,
            "scale": tuple(grid.scale)[-ndim:],
            "translate": tuple(grid.translate)[-ndim:],
        }
        if kind == "boxes":
            layer = self.viewer.add_shapes(
                face_color="transparent", edge_width=1.5, features=features, **place
            )
        else:
            layer = self.viewer.add_points(
                size=max(self.frame_shape()[1:]) / 40.0,
                border_width=0.3,
                border_width_is_relative=True,
                canvas_size_limits=(POINT_PX_MIN, POINT_PX_MAX),
                face_color=colours.POSITIVE_COLOUR,
                features={**features, "positive": np.zeros(0, bool)},
                **place,
            )
        layer.events.data.connect(self._on_data)
        setattr(self.state, kind, layer)
        self.follow_structure()
        return layer

    def boxes(self, create: bool = True) -> Any:
        """The Shapes layer of the boxes (made on first use; None if absent and not made)."""
        return self._layer("boxes", create)

    def points(self, create: bool = True) -> Any:
        """The Points layer of the clicks (made on first use; None if absent and not made)."""
        return self._layer("points", create)

    def _sources(self) -> list[tuple[str, Any, Callable[[Any, int], Prompt]]]:
        """``(source, layer, reader of a row)`` of the prompt layers there are."""
        found: list[tuple[str, Any, Callable[[Any, int], Prompt]]] = [
            ("boxes", self.boxes(False), self._box),
            ("points", self.points(False), self._point),
        ]
        return [(source, layer, make) for source, layer, make in found if layer is not None]

    def raise_layers(self) -> None:
        """Put the prompt layers on top (a new prediction layer would hide the boxes)."""
        layers = self.viewer.layers
        for _, layer, _ in self._sources():
            layers.move(layers.index(layer), len(layers))

    def forget(self) -> None:
        """Drop the prompts; the layers leave on the next turn of the event loop (napari must
        not remove a layer while it is still removing another)."""
        from qtpy.QtCore import QTimer

        self.masks = []
        old = [layer for _, layer, _ in self._sources()]
        self.state.boxes = self.state.points = None
        for layer in old:
            layer.events.data.disconnect(self._on_data)
        if old:
            QTimer.singleShot(
                0, lambda: [self.viewer.layers.remove(ly) for ly in old if ly in self.viewer.layers]
            )

    def follow_structure(self, positive: bool | None = None) -> None:
        """New items drawn in napari go to the current structure (and click polarity)."""
        if positive is not None:
            self._positive = bool(positive)
        label = self.state.current
        if label is None:
            return
        boxes, points = self.boxes(create=False), self.points(create=False)
        if boxes is not None:
            boxes.selected_data = set()  # current_* apply to the selected items too
            boxes.feature_defaults = {"label": int(label), "order": -1}
            boxes.current_edge_color = colours.PROMPT_COLOUR
        if points is not None:
            points.selected_data = set()
            points.feature_defaults = {"label": int(label), "order": -1, "positive": self._positive}
            points.current_face_color = _polarity(self._positive)
            points.current_border_color = colours.PROMPT_COLOUR

    def _to_grid(self, layer: Any, coords: np.ndarray) -> np.ndarray:
        """Rows of ``layer`` data coordinates as array indices of the grid layer."""
        grid = self.grid_layer()
        coords = np.atleast_2d(np.asarray(coords, float))
        n = coords.shape[1]
        same = (
            len(layer.scale) == n
            and np.allclose(layer.scale, tuple(grid.scale)[-n:])
            and np.allclose(layer.translate, tuple(grid.translate)[-n:])
            and np.allclose(layer.affine.affine_matrix, np.eye(n + 1))
        )
        if same:
            return coords
        return np.array(
            [np.asarray(grid.world_to_data(layer.data_to_world(c)))[-n:] for c in coords]
        )

    def _box(self, layer: Any, row: int) -> Box:
        v = self._to_grid(layer, layer.data[row])
        label = int(layer.features["label"].iloc[row])
        if v.shape[1] >= 3 and np.ptp(v[:, -3]) > 0.5:
            raise ValueError("a box must lie on one slice/frame (it spans several)")
        return Box.from_napari(v, label=label, index=None if v.shape[1] >= 3 else 0)

    def _point(self, layer: Any, row: int) -> Point:
        c = self._to_grid(layer, layer.data[row])[0]
        feats = layer.features.iloc[row]
        return Point.from_napari(c, label=int(feats["label"]), positive=bool(feats["positive"]))

    @staticmethod
    def _orders(layer: Any) -> np.ndarray:
        return np.asarray(layer.features["order"], int)[: len(layer.data)]

    def items(self, label: int | None = None) -> list[Item]:
        """Every prompt held (of structure ``label``), in the order given."""
        self.settle()
        out = [Item(order, m, "masks", i) for i, (order, m) in enumerate(self.masks)]
        for source, layer, make in self._sources():
            out += [
                Item(int(o), make(layer, i), source, i) for i, o in enumerate(self._orders(layer))
            ]
        out.sort(key=lambda it: it.order)
        return [it for it in out if label is None or it.prompt.label == int(label)]

    def sets(self) -> dict[int, PromptSet]:
        """One prompt set per structure (by structure id), each in the order given."""
        grouped: dict[int, list] = {}
        for it in self.items():
            grouped.setdefault(it.prompt.label, []).append(it.prompt)
        return {lab: PromptSet.of(grouped[lab], lab) for lab in sorted(grouped)}

    def _next_order(self) -> int:
        orders = [o for o, _ in self.masks]
        orders += [int(self._orders(ly).max()) for _, ly, _ in self._sources() if len(ly.data)]
        return max(orders, default=-1) + 1

    def add(self, prompt: Prompt, order: int | None = None) -> None:
        """Add ``prompt`` (array indices of the image) after the others (or at ``order``)."""
        order = self._next_order() if order is None else int(order)
        with self._mute():
            if isinstance(prompt, MaskPrompt):
                self.masks.append((order, prompt))
            elif isinstance(prompt, Box):
                layer = self.boxes()
                layer.selected_data = set()
                layer.add_rectangles(
                    [prompt.to_napari(layer.ndim)],
                    edge_color=colours.PROMPT_COLOUR,
                    face_color="transparent",
                )
                self._set_features(layer, {-1: {"label": prompt.label, "order": order}})
            else:
                layer = self.points()
                layer.selected_data = set()
                layer.add(prompt.to_napari(layer.ndim))
                last = {"label": prompt.label, "order": order, "positive": prompt.positive}
                self._set_features(layer, {-1: last})
                face, border = layer.face_color.copy(), layer.border_color.copy()
                face[-1] = _rgba(_polarity(prompt.positive))
                border[-1] = _rgba(colours.PROMPT_COLOUR)
                layer.selected_data = set()
                layer.face_color, layer.border_color = face, border
        self.follow_structure()

    def _set_features(self, layer: Any, rows: dict[int, dict]) -> None:
        """Set features of items of ``layer``: ``{position (-1: the last): {key: value}}``."""
        feats = layer.features.copy()
        for i, values in rows.items():
            for key, value in values.items():
                feats.loc[feats.index[i], key] = value
        with self._mute():
            layer.features = feats

    def remove(self, items: Iterable[Item]) -> None:
        """Remove ``items`` (from :meth:`items`)."""
        self._drop({(it.source, it.row) for it in items})

    def _drop(self, rows: set[tuple[str, int]]) -> None:
        with self._mute():
            self.masks = [m for i, m in enumerate(self.masks) if ("masks", i) not in rows]
            for source, layer, _ in self._sources():
                gone = sorted(i for s, i in rows if s == source)
                if gone and source == "boxes":
                    layer.selected_data = set(gone)
                    layer.remove_selected()
                elif gone:
                    layer.remove(gone)

    @contextmanager
    def _mute(self) -> Iterator[None]:
        """The layers' data events within are the panel's own (not drawn in napari)."""
        self._muted += 1
        try:
            yield
        finally:
            self._muted -= 1

    def replace(self, sets: dict[int, PromptSet], labels: list[int] | None = None) -> None:
        """Replace the prompts of ``labels`` (default: every structure) by ``sets``."""
        self.remove(it for it in self.items() if labels is None or it.prompt.label in labels)
        order = self._next_order()
        for p in (p for s in sets.values() for p in s.prompts):
            self.add(p, order)
            order += 1

    def _on_data(self, event: Any) -> None:
        if self._muted or str(getattr(event, "action", "")) not in ("added", "removed", "changed"):
            return
        if not self._scheduled:
            from qtpy.QtCore import QTimer

            self._scheduled = True
            QTimer.singleShot(0, self._settled_change)

    def _settled_change(self) -> None:
        self._scheduled = False  # a slot of a timer: it must never raise (Qt would abort)
        run_guarded("prompts", self.settle)
        run_guarded("prompts", self.on_change)

    def settle(self) -> None:
        """Give new items their order; remove those that do not fit the image (one notification)."""
        problems: list[str] = []
        order = self._next_order()
        for source, layer, make in self._sources():
            new = [i for i, o in enumerate(self._orders(layer)) if o < 0]
            bad = {i: why for i in new if (why := self._misfit(layer, make, i))}
            problems += bad.values()
            keep = [i for i in new if i not in bad]
            orders = {i: {"order": order + k} for k, i in enumerate(keep)}
            order += len(keep)
            if orders:
                self._set_features(layer, orders)
            if bad:
                self._drop({(source, i) for i in bad})
        if problems:
            show_error(f"prompt not added: {problems[0]}")

    def _misfit(self, layer: Any, make: Callable[[Any, int], Prompt], row: int) -> str | None:
        problem = self.plane_problem()
        if problem:
            return problem
        try:
            prompt = make(layer, row)
            name = self.state.structures.get(prompt.label)
            PromptSet.of([prompt]).validate(
                self.frame_shape(), name=name, where=self.where(), partial=True
            )
        except Exception as exc:  # noqa: BLE001 - said in the notification
            return str(exc)
        return None


def _polarity(positive: bool) -> str:
    """The colour of a positive or a negative click."""
    return colours.POSITIVE_COLOUR if positive else colours.NEGATIVE_COLOUR


def _rgba(colour: Any) -> np.ndarray:
    from napari.utils.colormaps.standardize_color import transform_color

    return transform_color(colour)[0]
