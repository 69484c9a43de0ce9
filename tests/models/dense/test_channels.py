"""Dense models with several input channels, per-channel statistics and ROG's MR min-max step."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from napari_segeval._errors import SegEvalError
from napari_segeval.inference.intensity import IntensityStats, clip_zscore, minmax_scale
from napari_segeval.io.case import Case, Geometry
from napari_segeval.models.dense._nnunet import plans_from_nnunet
from napari_segeval.models.dense._plans import model_from_plans

S0 = {"lower": 0.0, "upper": 300.0, "mean": 150.0, "std": 50.0}
S1 = {"lower": 0.1, "upper": 0.9, "mean": 0.5, "std": 0.2}


def _model(intensity, in_channels=2, **extra):
    plans = {
        "num_classes": 2,
        "patch_size": [4, 8, 8],
        "in_channels": in_channels,
        "intensity": intensity,
        **extra,
    }
    return model_from_plans(plans, torch.nn.Conv3d(in_channels, 2, 1), "toy", "cpu", {})


def _case(modality="MR", channels=2):
    rng = np.random.default_rng(0)
    img = rng.uniform(-100, 400, (channels, 4, 8, 8)).astype(np.float32)
    return Case(
        img if channels > 1 else img[0],
        Geometry.identity(3),
        "czyx" if channels > 1 else "zyx",
        modality,
    )


def test_each_channel_is_clipped_and_z_scored_with_its_statistics():
    m = _model([S0, S0 | {"mean": 0.0, "std": 100.0}])
    case = _case()
    x, info = m.preprocess(case)
    assert tuple(x.shape) == (1, 2, 4, 8, 8)
    for c, s in enumerate(m.stats_per_channel):
        np.testing.assert_allclose(x[0, c].numpy(), clip_zscore(case.image[c], s), atol=1e-6)
    assert info.channel_scale == (50.0, 100.0)
    assert info.channel_valid_range == ((-3.0, 3.0), (0.0, 3.0))
    assert info.valid_range == (-3.0, 3.0) and info.minmax_range is None
    assert m.describe()["in_channels"] == 2


def test_plans_must_give_one_set_of_statistics_per_channel():
    with pytest.raises(SegEvalError, match="one set of intensity statistics for 2 input"):
        _model(S0)
    with pytest.raises(SegEvalError, match="statistics for 1 channels, the network takes 2"):
        _model([S0])
    m = _model([S0, None])
    assert m.stats_per_channel[1] is None and m.intensity.std == 50.0


def test_mr_minmax_scales_each_channel_of_an_mr_image_first():
    m = _model([S1, S1], mr_minmax=True)
    assert m.mr_minmax is True
    case = _case("MR")
    x, info = m.preprocess(case)
    for c in range(2):
        scaled, rng = minmax_scale(case.image[c])
        np.testing.assert_allclose(
            x[0, c].numpy(), clip_zscore(scaled, IntensityStats(**S1)), atol=1e-5
        )
        assert info.minmax_range[c] == pytest.approx(rng)
        assert info.channel_scale[c] == pytest.approx(0.2 * rng)  # raw units per unit
    ct_x, ct_info = m.preprocess(_case("CT"))  # ROG: CT is never min-max scaled
    assert ct_info.minmax_range is None
    np.testing.assert_allclose(
        ct_x[0, 0].numpy(), clip_zscore(_case("CT").image[0], IntensityStats(**S1))
    )


def test_single_channel_models_are_unchanged():
    m = _model(S0, in_channels=1)
    case = _case(channels=1)
    x, info = m.preprocess(case)
    assert tuple(x.shape) == (1, 1, 4, 8, 8) and info.channel_scale == (50.0,)
    np.testing.assert_allclose(x[0, 0].numpy(), clip_zscore(case.image, m.intensity))


def test_nnunet_plans_list_one_set_of_statistics_per_channel(tmp_path):
    folder = tmp_path / "nnUNetTrainer__nnUNetPlans__3d_fullres"
    folder.mkdir()
    props = {
        str(c): {
            "mean": 10.0 * (c + 1),
            "std": 2.0,
            "percentile_00_5": 0.0,
            "percentile_99_5": 50.0,
        }
        for c in range(2)
    }
    conf = {
        "patch_size": [8, 8, 8],
        "spacing": [1, 1, 1],
        "normalization_schemes": ["CTNormalization", "CTNormalization"],
        "use_mask_for_norm": [False, False],
        "architecture": {"network_class_name": "x", "arch_kwargs": {}, "_kw_requires_import": []},
    }
    plans = {
        "configurations": {"3d_fullres": conf},
        "foreground_intensity_properties_per_channel": props,
        "transpose_forward": [0, 1, 2],
    }
    (folder / "plans.json").write_text(json.dumps(plans))
    (folder / "dataset.json").write_text(
        json.dumps({"labels": {"background": 0, "a": 1}, "channel_names": {"0": "CT", "1": "CT2"}})
    )
    p = plans_from_nnunet(folder)
    assert p["in_channels"] == 2 and [s["mean"] for s in p["intensity"]] == [10.0, 20.0]
    assert p["per_case_zscore"] is False
    conf["normalization_schemes"] = ["CTNormalization", "ZScoreNormalization"]
    (folder / "plans.json").write_text(json.dumps(plans))
    p = plans_from_nnunet(folder)
    assert p["per_case_zscore"] is True and p["intensity"] is None
