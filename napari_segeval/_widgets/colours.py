"""The viewer's colour language (docs/viewer.md), one definition every layer-making code reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from napari_segeval._names import CLEAN

#: The roles a Labels layer of the case plays.
ROLES = ("reference", CLEAN, "attacked")
#: Colour of each role when the case has one structure (Okabe–Ito palette).
ROLE_COLOURS = {"reference": "#f0e442", CLEAN: "#56b4e9", "attacked": "#d55e00"}
#: Colours of structures 1, 2, ... when the case has several (Tableau 10, cycled).
STRUCTURE_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
#: With several structures the attacked prediction's fill is the structure's colour times this.
ATTACKED_SHADE = 0.55
#: With several structures the reference's outline is the structure's colour mixed this
#: much with white: the same hue, visible where it runs over the structure's own fill.
REFERENCE_TINT = 0.5
#: Label ids the case does not name (painted by hand, say) with several structures.
OTHER_COLOUR = "#bbbbbb"
#: Outline width of the reference, in voxels (napari's ``contour``).
REFERENCE_CONTOUR = 1
#: Opacity of a filled prediction.
PREDICTION_OPACITY = 0.6
#: Positive click, and the false negatives it would fix (green).
POSITIVE_COLOUR = "#22dd44"
#: Negative click, and the false positives it would fix (magenta).
NEGATIVE_COLOUR = "#ff22ff"
#: Edges of box prompts.
PROMPT_COLOUR = "#ffffff"
#: The estimated risk of failure (per-slice plot: dashed curve, quality stops).
RISK_COLOUR = "#e69f00"
#: Disagreement of clean and attacked predictions: lost under attack, gained, changed.
DISAGREEMENT_COLOURS = {"lost": "#ff5030", "gained": "#30d0ff", "changed": "#ffd700"}


@dataclass(frozen=True)
class Look:
    """How one Labels layer is drawn: ``colours`` by label id (``None``: every other id, the
    background transparent) and napari's ``contour`` (0 fills, more: an outline that wide)."""

    colours: dict[int | None, str]
    contour: int


def _each_channel(colour: str, change: Callable[[int], float]) -> str:
    """``colour`` (``#rrggbb``) with ``change`` applied to each channel (0..255)."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{int(change(c)):02x}" for c in rgb)


def shade(colour: str, factor: float) -> str:
    """``colour`` (``#rrggbb``) with each channel times ``factor`` (0..1)."""
    return _each_channel(colour, lambda c: c * factor)


def tint(colour: str, amount: float) -> str:
    """``colour`` (``#rrggbb``) mixed ``amount`` (0..1) of the way to white."""
    return _each_channel(colour, lambda c: c + (255 - c) * amount)


def several(structures: Mapping[int, str]) -> bool:
    """True when the case names more than one structure (per-structure colours)."""
    return len(structures) > 1


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")


def structure_colour(label: int, structures: Mapping[int, str], role: str = CLEAN) -> str:
    """Colour of structure ``label`` in the layer of ``role``."""
    _check_role(role)
    if not several(structures):
        return ROLE_COLOURS[role]
    if int(label) not in structures:
        return OTHER_COLOUR
    base = STRUCTURE_COLOURS[(int(label) - 1) % len(STRUCTURE_COLOURS)]
    if role == "attacked":
        return shade(base, ATTACKED_SHADE)
    return tint(base, REFERENCE_TINT) if role == "reference" else base


def look(role: str, structures: Mapping[int, str]) -> Look:
    """The :class:`Look` of the layer of ``role`` in a case of ``structures``."""
    _check_role(role)
    contour = REFERENCE_CONTOUR if role == "reference" else 0
    if not several(structures):
        return Look({None: ROLE_COLOURS[role]}, contour)
    colours: dict[int | None, str] = {
        int(k): structure_colour(int(k), structures, role) for k in structures
    }
    colours[None] = OTHER_COLOUR
    return Look(colours, contour)


def colormap(role: str, structures: Mapping[int, str]) -> Any:
    """napari's :class:`~napari.utils.colormaps.DirectLabelColormap` of :func:`look`."""
    from napari.utils.colormaps import DirectLabelColormap

    return DirectLabelColormap(color_dict=dict(look(role, structures).colours))


def reference_name(name: str) -> str:
    """The name a layer gets once it is the case's reference."""
    if "reference" in name.lower():
        return name
    base = name.split(" [")[0]
    for ext in (".nii.gz", ".nii", ".mha", ".mhd", ".nrrd", ".nhdr", ".png", ".tif", ".tiff"):
        if base.lower().endswith(ext):
            base = base[: -len(ext)]
            break
    return f"reference ({base})"


def _swatch(colour: str, text: str, outline: bool = False) -> str:
    mark = "&#9633;" if outline else "&#9632;"  # hollow / filled square
    return f'<span style="color:{colour}">{mark}</span>&nbsp;{text}'


def legend_html(structures: Mapping[int, str]) -> str:
    """The two-line legend (Qt rich text) of the colour language for ``structures``."""
    gap = " &nbsp; "
    fp, fn = _swatch(NEGATIVE_COLOUR, "FP"), _swatch(POSITIVE_COLOUR, "FN")
    errors = gap.join([fp, fn, _swatch(PROMPT_COLOUR, "box", outline=True)])
    if not several(structures):
        texts = {"reference": "reference (outline)"}
        roles = gap.join(
            _swatch(ROLE_COLOURS[r], texts.get(r, r), outline=r == "reference") for r in ROLES
        )
        return f"{roles}<br>{errors}"
    names = gap.join(
        _swatch(structure_colour(k, structures), f"{k} {v}") for k, v in structures.items()
    )
    rule = "reference: outline · clean: filled · attacked: darker"
    return f"{names}<br>{rule}{gap}{errors}"


class ColourLanguage:
    """Keeps the case's Labels layers drawn in the colour language; the reference is renamed
    as one and kept above the predictions, so its outline is never hidden under a fill."""

    def __init__(self, viewer: Any, state: Any) -> None:
        self.viewer = viewer
        self.state = state
        # the state's signals are named by the roles (_state is a module above this one)
        self._slots = [(state.events.reference, self.apply)] + [
            (state.events[role], partial(self.apply, (role,))) for role in ROLES[1:]
        ]
        for signal, slot in self._slots:
            signal.connect(slot)
        self.apply()

    def apply(self, roles: tuple[str, ...] = ROLES) -> None:
        """Draw the layers of ``roles`` the state names now."""
        structures = dict(self.state.structures)
        for role in roles:
            layer = self.state.layer(role)
            if layer is None or not hasattr(layer, "contour"):
                continue
            layer.colormap = colormap(role, structures)
            if role == "reference":  # a prediction's contour is the user's
                layer.contour = REFERENCE_CONTOUR
                new = reference_name(layer.name)
                if new != layer.name and new not in self.viewer.layers:
                    layer.name = new
        self._reference_on_top()

    def _reference_on_top(self) -> None:
        layers = self.viewer.layers
        ref = self.state.reference
        if ref is None or ref not in layers:
            return
        preds = [p for p in self.state.predictions.values() if p is not None and p in layers]
        top = max((layers.index(p) for p in preds), default=-1)
        here = layers.index(ref)
        if here < top:
            layers.move(here, top + 1)  # above the highest prediction (insert before top + 1)

    def close(self) -> None:
        for signal, slot in self._slots:
            signal.disconnect(slot)
