import numpy as np
import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval.inference.intensity import (
    IntensityStats,
    clip_zscore,
    foreground_intensity_stats,
)


def test_percentiles_mean_std_on_known_array():
    img = np.arange(1, 201, dtype=np.float64).reshape(2, 10, 10)  # 1..200
    lab = np.zeros(img.shape, np.uint8)
    lab[1] = 2  # foreground = 101..200
    s = foreground_intensity_stats([(img, lab)], max_per_case=None)
    assert s.n_voxels == 100
    assert s.mean == pytest.approx(150.5)
    assert s.std == pytest.approx(np.arange(101, 201).std())
    # numpy linear percentiles: 0.5% of 99 steps -> 101.495; 99.5% -> 199.505
    assert s.lower == pytest.approx(101.495)
    assert s.upper == pytest.approx(199.505)


def test_stats_pooled_over_cases():
    a = (np.full((2, 2), 10.0), np.ones((2, 2), np.uint8))
    b = (np.full((2, 2), 30.0), np.ones((2, 2), np.uint8))
    s = foreground_intensity_stats([a, b])
    assert s.mean == 20.0 and s.std == 10.0


def test_clip_zscore_numbers():
    s = IntensityStats(lower=-100.0, upper=300.0, mean=100.0, std=50.0)
    out = clip_zscore(np.array([-1000, -100, 0, 100, 150, 300, 3000]), s)
    np.testing.assert_allclose(out, [-4, -4, -2, 0, 1, 4, 4])
    assert out.dtype == np.float32
    assert s.raw_per_normalized_unit == 50.0


def test_invalid_inputs():
    with pytest.raises(SegEvalError):
        IntensityStats(0.0, 1.0, 0.5, 0.0)
    with pytest.raises(SegEvalError, match="no foreground"):
        foreground_intensity_stats([(np.zeros(3), np.zeros(3))])
    with pytest.raises(SegEvalError, match="shape"):
        foreground_intensity_stats([(np.zeros(3), np.zeros(4))])
