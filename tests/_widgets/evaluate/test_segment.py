"""The Segment tab: dense models in the viewer, and the Attack tab attacking them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from napari_segeval._widgets.evaluate.segment import SegmentPanel
from napari_segeval._widgets.jobs.tasks import dense_ref
from napari_segeval.models.dense import segment_case
from napari_segeval.models.registry import load_dense

from ..conftest import wait_job


@pytest.mark.slow
def test_builtin_ct_segments_and_is_attacked(ct_viewer, qtbot):
    viewer, w = ct_viewer
    w.segment.device.value = "cpu"
    assert w.segment.spec() == ("builtin-ct", False, "cpu")
    assert not w.segment.path.enabled and not w.segment.trust.enabled
    case = w.state.to_case()
    w.segment.run()
    wait_job(qtbot, w.segment.runner, timeout=120000)
    assert w.segment.runner.last_error is None
    pred = w.state.predictions["clean"]
    assert pred is not None and pred in viewer.layers
    expected = segment_case(load_dense("builtin-ct", device="cpu"), case).labels
    np.testing.assert_array_equal(pred.data, expected)
    assert set(np.unique(pred.data)) == {0, 1, 2, 3, 4, 5}
    from napari.utils.colormaps.standardize_color import transform_color

    from napari_segeval._widgets.colours import structure_colour

    for label in (1, 2, 5):  # each structure's colour, the reference's outline its tint
        for layer, role in ((pred, "clean"), (w.state.reference, "reference")):
            drawn = transform_color(structure_colour(label, w.state.structures, role))[0]
            assert layer.get_color(label) == pytest.approx(drawn)
    assert w.state.model_kind == "dense" and w.state.model.name == "builtin-ct"
    assert w.tabs.currentWidget() is w.dice
    assert float(w.dice.cell(1, "Dice")) > 0.9

    # the Attack tab attacks the dense model, epsilon in its normalized units
    std = w.state.model.raw_per_normalized_unit
    assert w.attack.raw_epsilon() == pytest.approx(w.attack.eps.value * std)
    assert "HU" in w.attack.raw.value
    w.attack.attack.value = "fgsm"
    w.attack.eps.value = 0.5
    w.attack.steps.value = 1
    w.attack.run()
    wait_job(qtbot, w.attack.runner, timeout=300000)
    assert w.attack.runner.last_error is None
    res = w.attack.result
    assert res.params["target"]["kind"] == "dense"
    np.testing.assert_array_equal(res.clean_prediction, expected)
    attacked = w.state.predictions["attacked"]
    np.testing.assert_array_equal(attacked.data, res.attacked_prediction)
    assert np.abs(viewer.layers["ct perturbation"].data).max() <= 0.5 * std + 1e-3
    assert float(w.dice.cell(1, "Dice att.")) == pytest.approx(
        res.attacked_rows[0]["dice"], abs=5e-4
    )
    # a second run reuses the loaded model
    model = w.state.model
    w.segment.run()
    wait_job(qtbot, w.segment.runner, timeout=120000)
    assert w.state.model is model


def test_nnunet_without_extra_is_a_notification(ct_viewer, qtbot, tmp_path, notifications):
    pytest.importorskip("torch")
    try:
        import nnunetv2  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("nnunetv2 is installed")
    _viewer, w = ct_viewer
    w.segment.source.value = "nnU-Net v2 results folder"
    assert w.segment.path.enabled
    (tmp_path / "plans.json").write_text("{}")  # looks like a result folder
    w.segment.path.value = str(tmp_path)
    w.segment.device.value = "cpu"
    w.segment.run()
    wait_job(qtbot, w.segment.runner)
    assert "nnunet" in (w.segment.runner.last_error or "")
    assert any("napari-segeval[nnunet]" in m for m in notifications())
    assert w.state.predictions["clean"] is None and w.state.model is None


def test_missing_path_is_a_notification(ct_viewer, notifications):
    _viewer, w = ct_viewer
    w.segment.source.value = "TorchScript file"
    w.segment.run_button.click()
    assert any("choose a file first" in m for m in notifications())
    assert not w.segment.runner.running


def _torchscript(tmp_path):
    import torch

    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    net = UNet3D(UNetConfig(num_classes=3, base_channels=2, levels=2)).eval()
    path = tmp_path / "model.ts"
    torch.jit.trace(net, torch.zeros(1, 1, 8, 16, 16)).save(str(path))
    (tmp_path / "model.ts.json").write_text(
        json.dumps(
            {"patch_size": [8, 16, 16], "num_classes": 3, "structures": {"1": "a", "2": "b"}}
        )
    )
    return path


def test_torchscript_needs_the_trust_box(small_case, qtbot, tmp_path, notifications):
    viewer, state, _pred = small_case
    path = _torchscript(tmp_path)
    panel = SegmentPanel(viewer, state)
    panel.source.value = "TorchScript file"
    panel.device.value = "cpu"
    panel.path.value = str(path)
    assert panel.trust.enabled and not panel.trust.value
    panel.run()
    wait_job(qtbot, panel.runner)
    assert "trust" in (panel.runner.last_error or "")
    assert any("TorchScript files run code" in m for m in notifications())
    assert state.predictions["clean"] is None

    panel.trust.value = True
    assert panel.spec() == (str(path), True, "cpu")
    panel.run()
    wait_job(qtbot, panel.runner)
    assert panel.runner.last_error is None
    pred = state.predictions["clean"]
    expected = segment_case(
        load_dense(str(path), trust_torchscript=True, device="cpu"), state.to_case()
    ).labels
    np.testing.assert_array_equal(pred.data, expected)
    assert state.model_kind == "dense"
    # the trust box only counts for TorchScript files
    panel.source.value = "U-Net weights file"
    assert panel.spec()[1] is False


def test_dense_model_refuses_2d_images(make_napari_viewer, notifications):
    from napari_segeval._widgets._state import ViewerState

    viewer = make_napari_viewer()
    state = ViewerState()
    state.set_image(viewer.add_image(np.zeros((16, 16), np.float32), name="img"))
    panel = SegmentPanel(viewer, state)
    panel.run_button.click()
    assert any("3D volumes" in m for m in notifications())
    assert not panel.runner.running


def test_dense_ref_names():
    assert dense_ref("built-in CT U-Net", "") == "builtin-ct"
    assert dense_ref("U-Net weights file", "/w.pt") == "/w.pt"
    with pytest.raises(ValueError, match="unknown dense model source"):
        dense_ref("nope", "x")


def test_cancel_segmentation_leaves_nothing(ct_viewer, qtbot):
    viewer, w = ct_viewer
    w.segment.device.value = "cpu"
    n_layers = len(viewer.layers)
    w.segment.run()
    assert w.segment.runner.running
    with qtbot.waitSignal(w.segment.runner.job_done, timeout=120000) as blocker:
        w.segment.runner.cancel_button.click()
    assert blocker.args[1] == "cancelled"
    assert len(viewer.layers) == n_layers
    assert w.state.predictions["clean"] is None and w.state.model is None
