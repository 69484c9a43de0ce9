import threading

import numpy as np
import pytest
import torch

from napari_segeval._cancel import Cancelled
from napari_segeval.io.case import Case, Geometry
from napari_segeval.models.dense import segment_case
from napari_segeval.models.registry import load_dense


def _case(shape=(10, 30, 34), spacing=(2.5, 1.2, 1.2)):
    rng = np.random.default_rng(0)
    img = rng.normal(50, 30, shape).astype(np.int16)
    geom = Geometry(spacing, (-3.0, 7.0, 11.0), tuple(np.eye(3).ravel()))
    return Case(img, geom, axes="zyx", modality="CT")


def test_preprocess_resamples_and_normalizes(tiny_weights):
    m = load_dense(str(tiny_weights), device="cpu")
    case = _case()
    x, info = m.preprocess(case)
    assert x.shape == (1, 1, 10, 15, 17) and x.dtype == torch.float32
    assert info.resample.shape == (10, 15, 17)
    lo, hi = info.valid_range
    assert lo == pytest.approx((-20 - 60) / 30) and hi == pytest.approx((160 - 60) / 30)
    assert float(x.min()) >= lo - 1e-3 and float(x.max()) <= hi + 1e-3


def test_segment_case_returns_source_grid_and_record(tiny_weights):
    m = load_dense(str(tiny_weights), device="cpu")
    case = _case()
    calls = []
    res = segment_case(m, case, probabilities=True, progress=lambda d, t: calls.append((d, t)))
    assert res.labels.shape == case.image.shape and res.labels.dtype == np.uint8
    assert res.probabilities.shape == (6, *case.image.shape)
    np.testing.assert_allclose(res.probabilities.sum(0), 1.0, atol=1e-4)
    raw = segment_case(m, case, postprocess=False, probabilities=True)
    np.testing.assert_array_equal(raw.labels, raw.probabilities.argmax(0))
    assert calls and calls[-1][0] == calls[-1][1]
    p = res.params
    assert p["overlap"] == 0.5 and p["postprocess"]["applied"] is True
    assert p["preprocess"]["resample"]["shape"] == [10, 15, 17] or tuple(
        p["preprocess"]["resample"]["shape"]
    ) == (10, 15, 17)
    assert p["model"]["raw_per_normalized_unit"] == 30.0
    # organs reduced to one component each
    from scipy import ndimage

    for k in (1, 2, 3, 4):
        assert ndimage.label(res.labels == k, np.ones((3, 3, 3)))[1] <= 1


def test_grad_mode_gives_differentiable_logits(tiny_weights):
    m = load_dense(str(tiny_weights), device="cpu")
    res = segment_case(m, _case(), grad=True)
    assert res.input.requires_grad and res.logits.requires_grad
    res.logits[:, 1].mean().backward()
    assert res.input.grad is not None and float(res.input.grad.abs().sum()) > 0
    assert segment_case(m, _case()).logits is None


def test_mirror_and_cancel(tiny_weights):
    m = load_dense(str(tiny_weights), device="cpu")
    case = _case()
    res = segment_case(m, case, mirror=(0, 1), postprocess=False)
    assert res.params["mirror_axes"] == [0, 1]
    assert segment_case(m, case, mirror=True).params["mirror_axes"] == list(m.mirror_axes)
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        segment_case(m, case, cancel=ev)


def test_rejects_non_volume(tiny_weights):
    from napari_segeval._errors import InvalidImageError

    m = load_dense(str(tiny_weights), device="cpu")
    with pytest.raises(InvalidImageError, match="3D"):
        m.preprocess(Case(np.zeros((8, 8), np.float32), Geometry.identity(2), axes="yx"))
    bad = _case()
    bad.image = bad.image.astype(np.float32)
    bad.image[0, 0, 0] = np.inf
    with pytest.raises(InvalidImageError, match="infinite"):
        m.preprocess(bad)
    bad.image[0, 0, 0] = np.nan  # NaN padding: the minimum intensity (io._nan policy)
    x, _ = m.preprocess(bad)
    assert bool(x.isfinite().all())
