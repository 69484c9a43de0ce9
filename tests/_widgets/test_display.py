"""Display presets: contrast limits per preset and modality, apart from the model's input."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._widgets._state import ViewerState
from napari_segeval._widgets.display import (
    CT_DISPLAY_WINDOWS,
    FULL_RANGE,
    DisplayPreset,
    percentile_limits,
    presets_for,
)

#: Conventional CT display windows (W, L) in HU.
CONVENTIONAL = {
    "brain": (80, 40),
    "lung": (1500, -600),
    "mediastinum": (350, 50),
    "abdomen": (400, 40),
    "liver": (150, 30),
    "bone": (1800, 400),
}


@pytest.mark.parametrize("name", sorted(CONVENTIONAL))
def test_ct_window_limits(name):
    width, level = CONVENTIONAL[name]
    preset = next(p for p in presets_for("CT") if p.name.startswith(name + " "))
    assert preset.name == f"{name} W{width} L{level}"
    assert preset.limits(np.zeros(4)) == (level - width / 2, level + width / 2)


def test_presets_follow_the_modality():
    ct = [p.name for p in presets_for("CT")]
    assert ct[0].startswith("abdomen") and len(ct) == len(CT_DISPLAY_WINDOWS) + 2
    assert ct[-1] == FULL_RANGE
    for modality in ("MR", "other", "PET", "US"):
        names = [p.name for p in presets_for(modality)]
        assert names[0] == "0.5-99.5 %" and not any(" W" in n for n in names)


def test_percentiles_of_the_non_zero_voxels():
    rng = np.random.default_rng(0)
    brain = np.zeros((20, 50, 50), np.float32)  # a zero background around the head
    brain[5:15, 10:40, 10:40] = rng.uniform(100, 1100, (10, 30, 30))
    brain[10, 20, 20] = 30000.0  # one hot voxel
    lo, hi = percentile_limits(brain, 0.5, 99.5)
    assert 100 <= lo < 110 and 1090 < hi <= 1100  # the zeros and the outlier left out
    brain[0, 0, 0] = np.nan
    assert percentile_limits(brain, 0.5, 99.5) == pytest.approx((lo, hi), rel=1e-3)
    assert DisplayPreset(FULL_RANGE).limits(brain) == (0.0, 30000.0)
    assert percentile_limits(np.zeros((3, 3)), 1, 99) == (0.0, 1.0)  # nothing but zeros
    assert DisplayPreset(FULL_RANGE).limits(np.full((2, 2), 7.0)) == (7.0, 8.0)  # flat
    brain[0, 0, 1], brain[0, 0, 2] = np.inf, -np.inf  # the full range is of finite voxels
    assert DisplayPreset(FULL_RANGE).limits(brain) == (0.0, 30000.0)


def test_bad_percentiles_are_refused():
    with pytest.raises(ValueError, match="percentiles must satisfy"):
        percentile_limits(np.ones(3), 99, 1)


def test_case_panel_ct_presets_and_the_attacked_image(small_case, qtbot):
    from napari_segeval._widgets.case import CaseWidget

    viewer, state, _ = small_case
    case = CaseWidget(viewer, state)
    qtbot.addWidget(case)
    assert tuple(state.image.contrast_limits) == (-160.0, 240.0)  # abdomen, on arrival
    assert case.display.value == "abdomen W400 L40"
    attacked = viewer.add_image(np.array(state.image.data), name="attacked")
    state.set_attacked_image(attacked)
    case.display.value = "lung W1500 L-600"  # as a person picks it
    for layer in (state.image, attacked):
        assert tuple(layer.contrast_limits) == (-1350.0, 150.0)
        assert layer.contrast_limits_range[0] <= -1350.0  # the slider holds the window
    with pytest.raises(ValueError, match="no display preset"):
        case.set_display("0.5-99.5 % typo")


def test_case_panel_mr_gets_percentiles(make_napari_viewer, qtbot):
    from napari_segeval._widgets.case import CaseWidget

    viewer = make_napari_viewer()
    mr = np.zeros((6, 20, 20), np.int16)
    mr[1:5, 4:16, 4:16] = np.arange(4 * 12 * 12).reshape(4, 12, 12) + 100
    mr[3, 8, 8] = 3057  # a bright vessel pulls min-max up
    image = viewer.add_image(mr, name="t1", metadata={"modality": "MR", "axes": "zyx"})
    state = ViewerState()
    state.set_image(image)
    case = CaseWidget(viewer, state)
    qtbot.addWidget(case)
    expected = percentile_limits(mr, 0.5, 99.5)
    assert tuple(image.contrast_limits) == pytest.approx(expected)
    assert expected[0] >= 100 and expected[1] < 3057
    assert case.set_display(FULL_RANGE) == (0.0, 3057.0)
    rgb = viewer.add_image(np.zeros((8, 8, 3), np.uint8), rgb=True, name="photo")
    state.set_image(rgb)
    assert not case.display.enabled and case.presets == ()


def test_model_input_window_only_for_ct(small_case, qtbot):
    from napari_segeval._widgets.prompt.panel import WINDOW_ROW, PromptPanel

    viewer, state, _ = small_case
    panel = PromptPanel(viewer, state)
    qtbot.addWidget(panel)
    assert "model" in WINDOW_ROW and panel.ct_window.enabled  # the case is a CT
    panel.modality.value = "MR"
    assert not panel.ct_window.enabled
    panel.modality.value = "from image"
    assert panel.ct_window.enabled
