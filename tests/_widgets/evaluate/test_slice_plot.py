"""The per-slice plot: the structure's extent with a margin, titled, its marks drawn."""

from __future__ import annotations

import numpy as np
from qtpy.QtGui import QColor
from qtpy.QtWidgets import QScrollArea

from napari_segeval._widgets import colours
from napari_segeval._widgets._state import ViewerState
from napari_segeval._widgets.evaluate.dice import DicePanel
from napari_segeval._widgets.evaluate.slice_plot import X_TITLE, Y_TITLE, SlicePlot
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import PromptSet


def _tumour_case(make_napari_viewer):
    """60 slices; the reference on 20..30, the prediction on 22..33 (missed 20-21, FP 31-33)."""
    viewer = make_napari_viewer()
    ref = np.zeros((60, 16, 16), np.uint8)
    ref[20:31, 4:12, 4:12] = 1
    pred = np.zeros_like(ref)
    pred[22:34, 5:12, 4:12] = 1
    viewer.add_image(np.zeros(ref.shape, np.float32), name="ct")
    reference = viewer.add_labels(ref, name="ref", metadata={"structures": {1: "lesion"}})
    prediction = viewer.add_labels(pred, name="pred")
    state = ViewerState()
    state.set_image(viewer.layers["ct"])
    state.set_reference(reference)
    state.set_prediction("clean", prediction)
    state.prompts = {1: PromptSet.from_box(Box(4, 4, 12, 12, index=25, label=1))}
    return viewer, state


def test_plot_spans_the_extent_with_its_marks(make_napari_viewer, qtbot):
    viewer, state = _tumour_case(make_napari_viewer)
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    plot = panel.plot
    # reference or prediction on 20..33 (14 slices): 2 slices of margin each side
    assert (plot.lo, plot.hi) == (18, 35)
    assert plot.missed.nonzero()[0].tolist() == [20, 21]
    assert plot.false_positive.nonzero()[0].tolist() == [31, 32, 33]
    assert plot.prompts == (25,) and plot.ends == (22, 33)
    plot.resize(400, 160)
    image = plot.grab().toImage()  # (the panel's layout may size it otherwise)
    r = plot._plot_rect()
    assert plot.index_at(r.left()) == 18 and plot.index_at(r.right()) == 35
    assert plot.index_at(-50) == 18 and plot.index_at(10_000) == 35  # clamped to the range
    # drawn: under the axis, green on a missed slice, magenta on a false positive
    y = int(r.bottom() + 2 + plot.MARK_H / 2)
    fn, fp = QColor(colours.POSITIVE_COLOUR), QColor(colours.NEGATIVE_COLOUR)
    assert image.pixelColor(int(plot.x_of(20)), y).name() == fn.name()
    assert image.pixelColor(int(plot.x_of(32)), y).name() == fp.name()
    assert image.pixelColor(int(plot.x_of(26)), y).name() not in (fn.name(), fp.name())
    assert X_TITLE == "slice" and Y_TITLE == "Dice"


def test_plot_without_prediction_spans_the_reference(make_napari_viewer, qtbot):
    viewer, state = _tumour_case(make_napari_viewer)
    state.predictions["clean"].data = np.zeros((60, 16, 16), np.uint8)
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    assert (panel.plot.lo, panel.plot.hi) == (18, 32)
    assert panel.plot.missed.sum() == 11 and panel.plot.ends is None


def test_plot_range_setters():
    plot = SlicePlot()
    plot.set_series({"clean": np.full(10, np.nan)})
    assert (plot.lo, plot.hi) == (0, 9)
    plot.set_range((7, 99))
    assert (plot.lo, plot.hi) == (7, 9)
    plot.set_range(None)
    assert (plot.lo, plot.hi) == (0, 9)


def test_run_button_and_progress_stay_in_view(small_case, qtbot):
    from napari_segeval._widgets.prompt.panel import PromptPanel

    viewer, state, _ = small_case
    panel = PromptPanel(viewer, state)
    qtbot.addWidget(panel)
    for widget in (panel.run_button, panel.runner):
        parent = widget.parentWidget()
        while parent is not None and parent is not panel:
            assert not isinstance(parent, QScrollArea)  # never scrolled out of sight
            parent = parent.parentWidget()


def test_the_risk_curve_alone_or_beside_dice_with_the_chain_stop(make_napari_viewer, qtbot):
    from napari_segeval._widgets.evaluate.dice import PLOT_TITLE, RISK_ONLY_TITLE, RISK_TITLE
    from napari_segeval.uncertainty.risk import Flag, SliceRisk, StructureRisk

    viewer, state = _tumour_case(make_napari_viewer)
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    assert len(panel.plot.risk) == 0 and panel.plot_title.text() == PLOT_TITLE
    slices = tuple(SliceRisk(k, 0.1 + 0.02 * k, {}, area=5) for k in range(22, 34))
    stop = SliceRisk(34, 0.6, {}, (Flag.STOPPED,), area=0)
    state.set_risk({1: StructureRisk(1, 0.5, (*slices, stop), ((33, Flag.STOPPED.value),))})
    plot = panel.plot
    assert np.flatnonzero(np.isfinite(plot.risk)).tolist() == list(range(22, 35))
    assert plot.risk[34] == 0.6 and plot.stops == (33,)
    assert set(plot.series) == {"clean"} and plot.y_title() == "Dice, risk"
    assert panel.plot_title.text() == RISK_TITLE and (plot.lo, plot.hi) == (18, 35)
    plot.resize(400, 160)
    image = plot.grab().toImage()
    r = plot._plot_rect()
    want = QColor(colours.RISK_COLOUR)

    def orange(x: int) -> int:  # pixels near the risk's colour down column x
        near = 0
        for y in range(int(r.top()) + 20, int(r.bottom()) - 14):
            c = image.pixelColor(x, y)
            d = (
                abs(c.red() - want.red())
                + abs(c.green() - want.green())
                + abs(c.blue() - want.blue())
            )
            near += d < 90
        return near

    at_stop = max(orange(int(plot.x_of(33)) + dx) for dx in (-1, 0, 1))
    assert at_stop > 10 and orange(int(plot.x_of(27))) < 5  # the stop's dotted line, only there
    # without a reference: the risk alone over the slices it describes, no Dice
    state.set_case(state.image, None, {"clean": state.predictions["clean"]}, 1)
    state.set_risk({1: StructureRisk(1, 0.5, (*slices, stop), ((33, Flag.STOPPED.value),))})
    assert not plot.series and plot.y_title() == "risk" and len(plot.risk) == 60
    assert (plot.lo, plot.hi) == (21, 35) and plot.ends == (22, 33)
    assert panel.plot_title.text() == RISK_ONLY_TITLE and panel.table.isHidden()
    assert "no reference labels" in panel.message.text()
    state.set_risk({})  # another prediction: no curve
    assert len(plot.risk) == 0 and panel.plot_title.text() == PLOT_TITLE
