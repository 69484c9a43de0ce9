"""MedSAM2 preprocessing: uint8 range, ImageNet normalization, Pillow-equivalent resize."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from napari_segeval.models.medsam2._loop import fill_holes
from napari_segeval.models.medsam2._preprocess import resize_bicubic
from napari_segeval.models.medsam2.model import MedSAM2Model, to_uint8_range


def test_ct_to_uint8_truncates_like_medsam2():
    hu = np.array([[-1000.0, -160.0, 0.0, 40.0, 239.0, 2000.0]])
    expected = np.uint8(np.clip((hu + 160) / 400 * 255, 0, 255))
    np.testing.assert_array_equal(to_uint8_range(hu, "CT"), expected)


def test_preprocess_is_imagenet_normalized_rgb():
    model = MedSAM2Model.__new__(MedSAM2Model)  # preprocessing needs no network
    out = model.preprocess(np.array([[[-1000.0, 1000.0]]]), "CT", "abdomen")
    assert out.shape == (1, 1, 2, 3) and out.dtype == torch.float32
    mean = torch.tensor([0.485, 0.456, 0.406])
    std = torch.tensor([0.229, 0.224, 0.225])
    torch.testing.assert_close(out[0, 0, 0], (0 - mean) / std)
    torch.testing.assert_close(out[0, 0, 1], (1 - mean) / std)


def test_normalize_info_ct():
    info = MedSAM2Model.__new__(MedSAM2Model).normalize_info("CT", "abdomen")
    assert info.raw_per_normalized_unit == pytest.approx(400 * 0.224)
    assert info.valid_min == pytest.approx(-0.485 / 0.229)
    assert info.valid_max == pytest.approx((1 - 0.406) / 0.225)


@pytest.mark.parametrize("shape", [(48, 64), (700, 600)])
def test_resize_matches_pillow_bicubic(shape):
    from PIL import Image

    img = np.random.default_rng(0).random(shape).astype(np.float32) * 255
    ref = np.asarray(Image.fromarray(img, mode="F").resize((512, 512), Image.BICUBIC))
    got = resize_bicubic(torch.from_numpy(img).double()[None], (512, 512))[0].numpy()
    np.testing.assert_allclose(got, ref, atol=1e-3)


def test_fill_holes_small_only():
    logits = torch.full((1, 1, 12, 12), 5.0)
    logits[0, 0, 2:4, 2:4] = -3.0  # 4-pixel hole: filled
    logits[0, 0, 6:9, 6:9] = -3.0  # 9-pixel hole: kept
    out = fill_holes(logits, 8)
    assert (out[0, 0, 2:4, 2:4] == 0.1).all()
    assert (out[0, 0, 6:9, 6:9] == -3.0).all()
    assert torch.equal(fill_holes(logits, 0), logits)


def _medsam2_ct_frames(hu: np.ndarray, lo: float, hi: float, size: int) -> np.ndarray:
    """MedSAM2's 3D CT script's steps, written out independently: clip to the window,
    min-max the clipped volume, uint8, RGB, Pillow resize, /255, ImageNet mean/std."""
    from PIL import Image

    pre = np.clip(hu, lo, hi)
    pre = np.uint8((pre - pre.min()) / (pre.max() - pre.min()) * 255.0)
    out = np.zeros((pre.shape[0], 3, size, size))
    for i in range(pre.shape[0]):
        rgb = Image.fromarray(pre[i]).convert("RGB").resize((size, size))
        out[i] = np.array(rgb).transpose(2, 0, 1)
    out = out / 255.0
    mean = np.array([0.485, 0.456, 0.406])[:, None, None]
    std = np.array([0.229, 0.224, 0.225])[:, None, None]
    return (out - mean) / std


@pytest.mark.parametrize("window", [("lung", -1350.0, 150.0), ("abdomen", -160.0, 240.0)])
def test_preset_preprocessing_equals_medsam2_steps(window):
    name, lo, hi = window
    rng = np.random.default_rng(7)
    hu = rng.normal(-300, 300, size=(3, 37, 45)).clip(-1024, 120).round().astype(np.int16)
    model = MedSAM2Model.__new__(MedSAM2Model)
    model.resize, model.device = "pillow", torch.device("cpu")
    frames = model.preprocess(hu, "CT", name, ct_mapping="minmax")
    got = model.model_input(frames).double().numpy()
    theirs = _medsam2_ct_frames(hu.astype(np.float64), lo, hi, 512)
    np.testing.assert_allclose(got, theirs, atol=1e-5)
    model.resize = "float"  # the project's float resize skips Pillow's uint8 rounding
    diff = np.abs(model.model_input(frames).double().numpy() - theirs)
    assert diff.max() > 0  # overshoot clipping and rounding: large on noise, small on anatomy


def test_pillow_resize_refuses_gradients_and_bad_mode():
    from napari_segeval._errors import SegEvalError

    model = MedSAM2Model.__new__(MedSAM2Model)
    model.resize, model.device = "pillow", torch.device("cpu")
    x = torch.zeros(1, 4, 4, 3, requires_grad=True)
    with pytest.raises(SegEvalError, match="differentiable"):
        model.model_input(x)
    with pytest.raises(SegEvalError, match="resize"):
        model.with_options(resize="nearest")
