"""NaN policy: kept on read, counted, shown; models see the minimum intensity."""

import numpy as np
import pytest

from napari_segeval._errors import InvalidImageError
from napari_segeval.inference.windowing import to_unit, window_bounds
from napari_segeval.io import fill_nan, nan_mask, read_image, write_image
from napari_segeval.io.case import Geometry


def test_fill_nan_uses_minimum_and_counts():
    img = np.array([[np.nan, 3.0], [7.0, np.nan]], np.float32)
    out, n = fill_nan(img)
    assert n == 2 and out.tolist() == [[3.0, 3.0], [7.0, 3.0]] and np.isnan(img).sum() == 2
    _, n = fill_nan(np.arange(4))
    assert n == 0
    with pytest.raises(InvalidImageError, match="every voxel is NaN"):
        fill_nan(np.full(3, np.nan), "x.nii")
    assert nan_mask(img).tolist() == [[1, 0], [0, 1]]


def test_promptable_preprocessing_sees_the_minimum():
    mr = np.concatenate([np.full(50, np.nan), np.linspace(1, 1000, 1000)])
    filled = np.concatenate([np.full(50, 1.0), np.linspace(1, 1000, 1000)])
    assert window_bounds("MR", image=mr) == window_bounds("MR", image=filled)
    u, _, _ = to_unit(mr, "MR")
    np.testing.assert_array_equal(u, to_unit(filled, "MR")[0])
    ct = np.array([np.nan, -1000.0, 40.0])
    assert to_unit(ct, "CT", "abdomen")[0].tolist() == [0.0, 0.0, 0.5]


def test_nan_round_trips_through_writers(tmp_path):
    data = np.ones((2, 3, 4), np.float32)
    data[0, 0] = np.nan
    for ext in (".nii.gz", ".mha", ".nrrd"):
        case = read_image(write_image(tmp_path / f"n{ext}", data, Geometry.identity(3)))
        assert case.meta["nan_count"] == 4 and np.isnan(case.image[0, 0]).all()
