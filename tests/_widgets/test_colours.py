"""The colour language: one look per role, per structure the same colour in every layer."""

from __future__ import annotations

import numpy as np
import pytest
from qtpy.QtCore import Qt

from napari_segeval._widgets import colours
from napari_segeval._widgets._state import ViewerState
from napari_segeval._widgets.colours import (
    REFERENCE_CONTOUR,
    ROLE_COLOURS,
    look,
    structure_colour,
)


def rgba(colour: str) -> np.ndarray:
    from napari.utils.colormaps.standardize_color import transform_color

    return transform_color(colour)[0]


def drawn(layer, label: int) -> np.ndarray:
    """RGBA napari draws ``label`` of ``layer`` in."""
    return np.asarray(layer.colormap.map(np.array([label], layer.data.dtype)))[0]


def test_one_structure_gets_role_colours_all_different():
    one = {1: "tumour"}
    got = {role: look(role, one).colours[None] for role in colours.ROLES}
    assert got == ROLE_COLOURS
    assert len(set(got.values())) == 3
    assert look("reference", one).contour == REFERENCE_CONTOUR
    assert look("clean", one).contour == look("attacked", one).contour == 0


def test_several_structures_same_colour_in_every_layer():
    names = {1: "liver", 2: "spleen", 3: "kidney"}
    ref, clean, att = (look(r, names).colours for r in colours.ROLES)
    assert len({ref[k] for k in names}) == 3  # structures differ
    for k in names:  # the outline lighter, the attacked fill darker: the same hue
        assert ref[k] == colours.tint(clean[k], colours.REFERENCE_TINT) != clean[k]
        assert att[k] == colours.shade(clean[k], colours.ATTACKED_SHADE) != clean[k]
    assert ref[None] == colours.OTHER_COLOUR  # an id the case does not name
    assert structure_colour(12, {**names, 12: "x"}) == colours.STRUCTURE_COLOURS[1]  # cycled


def test_bad_role_is_refused():
    with pytest.raises(ValueError, match="role must be one of"):
        look("prediction", {1: "a"})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("lung2.nii.gz [1]", "reference (lung2)"),
        ("brain.nrrd", "reference (brain)"),
        ("seg", "reference (seg)"),
        ("case_0 Reference", "case_0 Reference"),
    ],
)
def test_reference_name(name, expected):
    assert colours.reference_name(name) == expected


def test_single_case_layers_drawn_as_their_roles(small_case, qtbot):
    """Evaluate widget: reference outlined on top, clean and attacked filled, per structure."""
    from napari_segeval._widgets._layers import prediction_layer
    from napari_segeval._widgets.main import SegEvalWidget

    viewer, state, prediction = small_case
    widget = SegEvalWidget(viewer, state)
    qtbot.addWidget(widget)
    ref = state.reference
    assert ref.contour == REFERENCE_CONTOUR
    state.set_prediction("clean", prediction)  # a layer the person made: restyled
    attacked = prediction_layer(viewer, state, np.array(prediction.data), "att", role="attacked")
    state.set_prediction("attacked", attacked)
    names = state.structures
    for label in names:
        expected = rgba(structure_colour(label, names))
        outline = rgba(structure_colour(label, names, "reference"))
        np.testing.assert_allclose(drawn(ref, label), outline, atol=1e-6)
        np.testing.assert_allclose(drawn(prediction, label), expected, atol=1e-6)
        dark = rgba(structure_colour(label, names, "attacked"))
        np.testing.assert_allclose(drawn(attacked, label), dark, atol=1e-6)
    assert prediction.contour == attacked.contour == 0
    assert drawn(prediction, 0)[3] == 0  # the background stays transparent
    layers = list(viewer.layers)  # the outline is never under a fill
    assert layers.index(ref) > max(layers.index(prediction), layers.index(attacked))
    # the legend names every structure in its colour, and the roles' looks
    legend = widget.display.legend.text()
    for label, name in names.items():
        assert structure_colour(label, names) in legend and name in legend
    assert "outline" in legend
    # the box prompt is white, not a label colour
    from napari.utils.colormaps.standardize_color import transform_color

    box = widget.prompt.tools.layers.boxes().current_edge_color
    assert np.allclose(transform_color(box), transform_color(colours.PROMPT_COLOUR))


def test_one_structure_case_role_colours(make_napari_viewer, qtbot):
    """With one structure the reference, clean and attacked layers differ in colour."""
    from napari_segeval._widgets.case import CaseWidget

    viewer = make_napari_viewer()
    ref = np.zeros((4, 8, 8), np.uint8)
    ref[1:3, 2:6, 2:6] = 1
    viewer.add_image(np.zeros((4, 8, 8), np.float32), name="t1")
    reference = viewer.add_labels(ref, name="lesion.nii.gz", metadata={"structures": {1: "a"}})
    clean = viewer.add_labels(ref.copy(), name="clean")
    attacked = viewer.add_labels(ref.copy(), name="attacked")
    state = ViewerState()
    case = CaseWidget(viewer, state)
    qtbot.addWidget(case)
    state.set_reference(reference)
    state.set_prediction("clean", clean)
    state.set_prediction("attacked", attacked)
    assert reference.name == "reference (lesion)"
    for layer, role in ((reference, "reference"), (clean, "clean"), (attacked, "attacked")):
        np.testing.assert_allclose(drawn(layer, 1), rgba(ROLE_COLOURS[role]), atol=1e-6)
    assert reference.contour == REFERENCE_CONTOUR and clean.contour == 0


def test_dice_colour_not_hidden_by_the_selection(small_case, qtbot):
    from qtpy.QtGui import QColor

    from napari_segeval._widgets.evaluate.dice import DicePanel

    viewer, state, prediction = small_case
    state.set_prediction("clean", prediction)
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    col = panel.headers().index("Dice")
    for row in range(panel.table.rowCount()):
        dice = panel.table.item(row, col)
        assert not dice.flags() & Qt.ItemIsSelectable  # its colour is never covered
        assert not dice.isSelected()
        name = panel.table.item(row, 0)
        label = panel.records[row]["label"]
        assert name.data(Qt.DecorationRole) == QColor(structure_colour(label, state.structures))
    panel.table.selectRow(1)  # a click on the row still picks the structure
    assert state.current == panel.records[1]["label"]
