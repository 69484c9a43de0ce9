"""The 2D U-Net model of ``cv5-2d`` at run time: channels, config, files."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from napari_segeval._errors import InvalidImageError, ReadError, SegEvalError
from napari_segeval.models.dense.unet2d import (
    TrainConfig2D,
    UNet2DModel,
    as_channels,
    build_network,
)
from napari_segeval.models.registry import load_dense

CFG = TrainConfig2D(iterations=1, size=(16, 16), width=4, levels=2)


def _model(in_channels: int = 3) -> UNet2DModel:
    torch.manual_seed(0)
    net = build_network(in_channels, 2, CFG.width, CFG.levels)
    meta = {
        "in_channels": in_channels,
        "num_classes": 2,
        "config": CFG.to_dict(),
        "mean": [100.0] * in_channels,
        "std": [50.0] * in_channels,
        "train_cases": ["a"],
        "structures": {"1": "square"},
    }
    return UNet2DModel(net.state_dict(), meta)


def test_as_channels():
    assert as_channels(np.zeros((4, 5))).shape == (1, 4, 5)
    assert as_channels(np.zeros((4, 5, 3)), 1).shape == (1, 4, 5)
    with pytest.raises(InvalidImageError):
        as_channels(np.zeros((2, 4, 5, 6)))


def test_config_checks_size():
    with pytest.raises(SegEvalError, match="multiples"):
        TrainConfig2D(size=(30, 40), levels=4)


def test_network_keys_are_stable():
    """Saved fold models name their tensors like this: renaming breaks old files."""
    keys = list(build_network(3, 2, width=4, levels=2).state_dict())
    assert keys[:6] == [
        "down.0.0.weight",
        "down.0.1.weight",
        "down.0.1.bias",
        "down.0.3.weight",
        "down.0.4.weight",
        "down.0.4.bias",
    ]
    assert keys[-4:] == ["merge.0.4.weight", "merge.0.4.bias", "head.weight", "head.bias"]


def test_save_load_roundtrip(tmp_path):
    m = _model()
    image = np.random.default_rng(0).integers(0, 255, (16, 20, 3)).astype(np.uint8)
    back = load_dense(str(m.save(tmp_path / "m.pt")), device="cpu")
    assert back.structures == {1: "square"} and back.config == m.config
    np.testing.assert_array_equal(back.probabilities(image), m.probabilities(image))


def test_bad_files_are_one_line_errors(tmp_path, code_payload):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"nope")
    with pytest.raises(ReadError, match=r"bad\.pt: not a readable dense model weight file"):
        load_dense(str(bad), device="cpu")
    evil = tmp_path / "evil.pt"
    evil.write_bytes(pickle.dumps({"format": code_payload}))
    with pytest.raises(
        ReadError, match=r"evil\.pt: refused: this dense model weight file contains"
    ):
        load_dense(str(evil), device="cpu")
    assert not code_payload.marker.exists()
    with pytest.raises(ReadError, match=r"foreign\.pt: not a 2D U-Net model file: no format"):
        UNet2DModel.from_checkpoint({"model": {}}, "foreign.pt")
    m = _model()
    m.state_dict.pop("head.bias")
    with pytest.raises(
        ReadError,
        match=r"short\.pt: this 2D U-Net model file does not fit the 2D "
        r"U-Net: 1 missing keys \(e\.g\. head\.bias\)",
    ):
        load_dense(str(m.save(tmp_path / "short.pt")), device="cpu")


def test_builtin_2d_is_a_registry_name_and_its_files_load_by_path(tmp_path):
    """``builtin-2d`` is listed with the other models; a saved fold model loads by its path."""
    from napari_segeval.evaluation.protocols import cv5_2d
    from napari_segeval.models.registry import DENSE, describe

    assert cv5_2d.BUILTIN in DENSE
    assert "builtin-2d" in [row["name"] for row in describe()]
    with pytest.raises(SegEvalError, match="no shipped weights, trained per fold"):
        load_dense("builtin-2d")
    m = _model()
    back = load_dense(str(m.save(tmp_path / "fold0.pt")), device="cpu")
    image = np.random.default_rng(1).integers(0, 255, (16, 20, 3)).astype(np.uint8)
    assert isinstance(back, UNet2DModel) and back.structures == {1: "square"}
    np.testing.assert_array_equal(back.probabilities(image), m.probabilities(image))
