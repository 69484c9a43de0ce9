"""The FP/FN overlay is really drawn: screenshot pixels are coloured where the mask is."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._widgets import colours
from napari_segeval._widgets._state import ViewerState
from napari_segeval._widgets.evaluate.dice import DicePanel


@pytest.mark.slow
def test_overlay_pixels_in_screenshot(make_napari_viewer, qtbot):
    viewer = make_napari_viewer(show=True)
    ref = np.zeros((64, 64), np.uint8)
    pred = np.zeros((64, 64), np.uint8)
    pred[:, :32] = 1  # left half: false positive
    ref[:, 32:] = 1  # right half: false negative
    reference = viewer.add_labels(
        ref, name="ref", visible=False, metadata={"structures": {1: "lesion"}, "axes": "yx"}
    )
    prediction = viewer.add_labels(pred, name="pred", visible=False)
    state = ViewerState()
    state.set_reference(reference)
    state.set_prediction("clean", prediction)
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    panel.overlay_box.setChecked(True)
    layer = panel.overlay.layer
    layer.opacity = 1.0
    viewer.reset_view()
    shot = viewer.screenshot(canvas_only=True, flash=False)
    h, w = shot.shape[:2]
    side = min(h, w)
    cy, cx = h // 2, w // 2
    left = shot[cy, cx - side // 4, :3].astype(int)
    right = shot[cy, cx + side // 4, :3].astype(int)
    corner = shot[2, 2, :3].astype(int)
    # the colour language's FP colour on the left, its FN colour on the right, dark outside
    fp = np.array([int(colours.NEGATIVE_COLOUR[i : i + 2], 16) for i in (1, 3, 5)])
    fn = np.array([int(colours.POSITIVE_COLOUR[i : i + 2], 16) for i in (1, 3, 5)])
    assert np.abs(left - fp).max() < 30, left
    assert np.abs(right - fn).max() < 30, right
    assert corner.max() < 60, corner
