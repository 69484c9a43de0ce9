import json

import numpy as np
import pytest

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.inference.intensity import (
    IntensityStats,
    clip_zscore,
    foreground_intensity_stats,
    stats_from_task,
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


def test_json_round_trip(tmp_path):
    s = IntensityStats(1.0, 2.0, 1.5, 0.25, 10, "x")
    p = s.save_json(tmp_path / "s.json")
    assert IntensityStats.load_json(p) == s
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ReadError, match="bad.json"):
        IntensityStats.load_json(tmp_path / "bad.json")


def test_invalid_inputs():
    with pytest.raises(SegEvalError):
        IntensityStats(0.0, 1.0, 0.5, 0.0)
    with pytest.raises(SegEvalError, match="no foreground"):
        foreground_intensity_stats([(np.zeros(3), np.zeros(3))])
    with pytest.raises(SegEvalError, match="shape"):
        foreground_intensity_stats([(np.zeros(3), np.zeros(4))])


def test_stats_from_task_folder(tmp_path):
    from napari_segeval import io
    from napari_segeval.io.case import Geometry

    (tmp_path / "imagesTr").mkdir()
    (tmp_path / "labelsTr").mkdir()
    geom = Geometry.identity(3)
    img = np.arange(64, dtype=np.int16).reshape(4, 4, 4)
    lab = (img >= 32).astype(np.uint8)
    io.write_image(tmp_path / "imagesTr" / "a.nii.gz", img, geom)
    io.write_labels(tmp_path / "labelsTr" / "a.nii.gz", lab, geom)
    (tmp_path / "dataset.json").write_text(
        json.dumps({"training": [{"image": "./imagesTr/a.nii.gz", "label": "./labelsTr/a.nii.gz"}]})
    )
    s = stats_from_task(tmp_path)
    assert s.mean == pytest.approx(47.5)
    assert s.source == str(tmp_path)
    with pytest.raises(ReadError, match="dataset.json"):
        stats_from_task(tmp_path / "imagesTr")
