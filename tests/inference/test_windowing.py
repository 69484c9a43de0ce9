"""CT windows and MR clipping."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import InvalidImageError, SegEvalError
from napari_segeval.inference.windowing import CT_WINDOWS, apply_window, mr_clip, parse_window


def test_presets_match_medsam2():
    assert CT_WINDOWS == {
        "abdomen": (40.0, 400.0),
        "lung": (-600.0, 1500.0),
        "brain": (40.0, 80.0),
        "mediastinum": (50.0, 350.0),
    }


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("Abdomen", (40.0, 400.0)),
        ("1500,-600", (-600.0, 1500.0)),
        ("80/40", (40.0, 80.0)),
        ((350, 50), (50.0, 350.0)),
    ],
)
def test_parse_window(spec, expected):
    assert parse_window(spec) == expected


@pytest.mark.parametrize("spec", ["liver", "400", "a,b", "0,40", "-5,40", (1, 2, 3)])
def test_parse_window_errors(spec):
    with pytest.raises(SegEvalError):
        parse_window(spec)


def test_apply_window_edges_and_linearity():
    level, width = CT_WINDOWS["lung"]
    lo, hi = level - width / 2, level + width / 2
    hu = np.array([lo - 1, lo, (lo + hi) / 2, hi, hi + 1])
    out = apply_window(hu, level, width)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [0, 0, 127.5, 255, 255], atol=1e-4)


def test_apply_window_rejects_inf_fills_nan():
    with pytest.raises(InvalidImageError):
        apply_window(np.array([0.0, np.inf]), 40, 400)
    # NaN padding is the minimum intensity (napari_segeval.io._nan)
    assert apply_window(np.array([0.0, np.nan]), 40, 400).tolist() == [102.0, 102.0]


def test_mr_clip_uses_nonzero_percentiles():
    rng = np.random.default_rng(1)
    img = np.zeros((10, 10, 10))
    img[2:8, 2:8, 2:8] = rng.normal(300, 50, (6, 6, 6))
    out = mr_clip(img)
    nz = img[img != 0]
    lo, hi = np.percentile(nz, [0.5, 99.5])
    expected = (np.clip(img, lo, hi) - lo) / (hi - lo) * 255
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-3)
    assert out.min() == 0 and out.max() == pytest.approx(255)
    assert (out[img == 0] == 0).all()


def test_mr_clip_degenerate():
    assert not mr_clip(np.zeros((4, 4))).any()
    assert not mr_clip(np.full((4, 4), 7.0)).any()
    with pytest.raises(SegEvalError):
        mr_clip(np.ones(3), 50, 10)


def test_to_unit_ct_window_edges_and_mr_percentiles():
    from napari_segeval.inference.windowing import to_unit, window_bounds

    u, lo, hi = to_unit(np.array([-160, 40, 240, 3000]), "CT", "abdomen")
    assert u.tolist() == [0.0, 0.5, 1.0, 1.0] and (lo, hi) == (-160, 240)
    assert window_bounds("CT") == (-160.0, 240.0)
    mr = np.concatenate([np.zeros(100), np.linspace(1, 1000, 1000)])
    lo, hi = window_bounds("MR", image=mr)
    assert 1 < lo < 10 and 990 < hi < 1000
    assert window_bounds("US") == (0.0, 255.0)
    with pytest.raises(SegEvalError, match="NaN"):
        to_unit(np.array([np.nan]), "US")
    with pytest.raises(SegEvalError, match="image="):
        window_bounds("MR")


def test_ct_minmax_rescales_the_clipped_volume_like_medsam2():
    rng = np.random.default_rng(3)
    hu = rng.integers(-1000, 200, size=(3, 8, 8)).astype(np.int16)  # max below the lung edge
    lo, hi = -1350.0, 150.0  # lung window W=1500 L=-600
    clipped = np.clip(hu.astype(np.float64), lo, hi)
    theirs = (clipped - clipped.min()) / (clipped.max() - clipped.min()) * 255.0
    np.testing.assert_allclose(apply_window(hu, -600, 1500, "minmax"), theirs, rtol=1e-6, atol=1e-4)
    edges = apply_window(hu, -600, 1500)
    assert not np.allclose(edges, theirs)  # the data does not reach 150 HU: they differ
    full = hu.copy()
    full.flat[0], full.flat[1] = -2000, 500  # reaches both edges
    np.testing.assert_allclose(
        apply_window(full, -600, 1500, "minmax"), apply_window(full, -600, 1500), atol=1e-4
    )


def test_ct_mapping_flows_through_to_unit_and_refuses_unknown():
    from napari_segeval.inference.windowing import to_unit

    hu = np.array([-100.0, 0.0, 100.0])
    unit, lo, hi = to_unit(hu, "CT", "abdomen", ct_mapping="minmax")
    assert (lo, hi) == (-100.0, 100.0)
    np.testing.assert_allclose(unit, [0.0, 0.5, 1.0])
    assert apply_window(np.full(4, 50.0), 40, 400, "minmax").tolist() == [0.0] * 4
    with pytest.raises(SegEvalError, match="ct_mapping"):
        apply_window(hu, 40, 400, "edges")
