"""The Uncertainty action: heat-map layer from a worker, per-structure column in the Dice panel."""

from __future__ import annotations

import numpy as np
import pytest
from napari.layers import Image

from napari_segeval._widgets.evaluate.dice import DicePanel
from napari_segeval._widgets.evaluate.dice_table import UNC_HEADER
from napari_segeval._widgets.jobs.tasks import uncertainty
from napari_segeval._widgets.prompt.run import estimate_text
from napari_segeval.uncertainty import structure_scores

from .conftest import wait_job


def test_dice_panel_shows_uncertainty_beside_dice(small_case, qtbot):
    viewer, state, prediction = small_case
    state.set_prediction("clean", prediction)
    panel = DicePanel(viewer, state)
    qtbot.addWidget(panel)
    assert UNC_HEADER not in panel.headers()
    state.set_uncertainty({1: 0.25, 2: 0.5})
    heads = panel.headers()
    assert heads[heads.index("Dice") + 1] == UNC_HEADER
    assert panel.cell(1, UNC_HEADER) == "0.250" and panel.cell(2, UNC_HEADER) == "0.500"
    assert panel.table.columnCount() == len(heads)
    # a new clean prediction makes the old scores meaningless: the column goes away
    prediction.data = np.zeros_like(prediction.data)
    assert state.uncertainty == {} and UNC_HEADER not in panel.headers()


def test_uncertainty_action_adds_heatmap_and_scores(ct_viewer, qtbot, notifications):
    viewer, w = ct_viewer
    w.state.set_current(1)
    box = w.prompt.tools.box_from_reference()
    assert w.prompt.uncertainty_button.text() == "Uncertainty"  # nothing ran: no estimate
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    pred = w.state.predictions["clean"]
    # the time it will take is said before it starts: samples x one whole propagation
    seconds = w.prompt.jobs.propagation_seconds()
    assert seconds is not None and seconds > 0
    w.prompt.samples.value = 3
    expected = estimate_text(seconds, 3)
    assert expected and w.prompt.uncertainty_button.text() == f"Uncertainty ({expected})"
    w.prompt.uncertainty_button.click()
    assert w.prompt.runner.status.text() == f"uncertainty: 3 samples, {expected}..."
    wait_job(qtbot, w.prompt.runner)
    assert w.prompt.runner.last_error is None, notifications()
    layer = viewer.layers["ct uncertainty"]
    assert isinstance(layer, Image) and layer.colormap.name == "inferno"
    assert layer.opacity == pytest.approx(0.6) and str(layer.blending) == "additive"
    assert tuple(layer.scale) == tuple(w.state.reference.scale)
    assert layer.data.shape == w.state.image.data.shape
    assert float(layer.data.min()) >= 0.0 and float(layer.data.max()) <= 1.0
    assert float(layer.data.max()) > 0.0  # box jitter makes the boundary uncertain
    # the worker ran the core function: same map, same per-structure scores
    _, umap, scores = uncertainty(
        w.prompt.spec(),
        (w.state.model_key, w.state.model),
        w.state.image.data,
        "CT",
        [box],
        "volume",
        pred.data,
        w.state.structures,
        n_samples=3,
    )
    np.testing.assert_allclose(layer.data, umap, atol=1e-6)
    rows = structure_scores(umap, pred.data, w.state.structures)
    assert scores == {r["label"]: r["score"] for r in rows}
    assert float(w.dice.cell(1, UNC_HEADER)) == pytest.approx(scores[1], abs=5e-4)
    assert np.isnan(scores[2])  # the spleen was not prompted, so not predicted: no score


def test_uncertainty_without_prompts_shows_an_error(ct_viewer, notifications):
    viewer, w = ct_viewer
    w.prompt.uncertainty_button.click()
    assert not w.prompt.runner.running
    assert "ct uncertainty" not in viewer.layers
    assert any("uncertainty failed" in m and "no prompt yet" in m for m in notifications())


def test_a_model_that_keeps_embeddings_gets_box_jitter_alone(monkeypatch):
    """noise_std None: no intensity noise where the slices can be encoded once."""
    import napari_segeval.uncertainty as U
    from napari_segeval.models.threshold import ThresholdPromptModel
    from napari_segeval.prompts import Box

    heard = []
    real = U.prompt_tta
    monkeypatch.setattr(
        U, "prompt_tta", lambda *a, **k: (heard.append(k["noise_std"]), real(*a, **k))[1]
    )
    image = np.zeros((4, 16, 16), np.float32)
    image[:, 4:12, 4:12] = 1.0
    args = (image, "CT", [Box(4, 4, 12, 12, index=1)], "volume", None, {1: "a"})

    class Keeping(ThresholdPromptModel):
        def feature_cache(self):
            return None  # keeps nothing, but declares that it keeps frames

    plain, keeping = ThresholdPromptModel(), Keeping()
    assert keeping.capabilities.frame_features and not plain.capabilities.frame_features
    for model in (plain, keeping):
        spec = ("threshold", None, "cpu")
        uncertainty(spec, (spec, model), *args, n_samples=2)
    assert heard == [0.02, 0.0]
