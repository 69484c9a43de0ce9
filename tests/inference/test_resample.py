import numpy as np
import pytest

from napari_segeval.inference.resample import (
    median_spacing,
    resample_back,
    resample_image,
    resample_labels,
    resampled_shape,
    slice_axis_of,
)


def _ball(shape, spacing, radius_mm):
    grids = np.meshgrid(
        *[(np.arange(n) - (n - 1) / 2) * s for n, s in zip(shape, spacing)], indexing="ij"
    )
    return (sum(g**2 for g in grids) < radius_mm**2).astype(np.uint8)


def test_shape_and_exact_spacing():
    img = np.zeros((10, 33, 33), np.float32)
    out, info = resample_image(img, (2.0, 1.0, 1.0), (2.0, 1.5, 1.5))
    assert out.shape == info.shape == resampled_shape(img.shape, (2, 1, 1), (2, 1.5, 1.5))
    assert info.shape == (10, 22, 22)
    # same physical extent
    np.testing.assert_allclose(np.multiply(info.shape, info.spacing), [20, 33, 33])
    assert out.dtype == np.float32 and info.slice_axis is None


def test_round_trip_keeps_geometry_and_content():
    spacing = (2.5, 1.2, 1.2)
    lab = _ball((20, 50, 50), spacing, 18.0)
    img = lab.astype(np.float32) * 100
    small, info = resample_image(img, spacing, (2.5, 2.0, 2.0), order=1)
    back = resample_back((small > 50).astype(np.float32), info, order=1) > 0.5
    assert back.shape == lab.shape
    dice = 2 * (back & (lab > 0)).sum() / (back.sum() + lab.sum())
    assert dice > 0.95
    # a label map resampled back with nearest lands on the same grid
    rl = resample_labels(lab, info)
    assert resample_back(rl, info, order=0).shape == lab.shape


def test_anisotropic_uses_nearest_along_slices():
    assert slice_axis_of((5.0, 1.0, 1.0)) == 0
    assert slice_axis_of((3.0, 1.0, 1.0)) is None
    img = np.zeros((4, 8, 8), np.float32)
    img[1] = 100.0  # a single bright slice
    out, info = resample_image(img, (6.0, 1.0, 1.0), (3.0, 1.0, 1.0), order=3)
    assert info.slice_axis == 0 and out.shape == (8, 8, 8)
    # nearest along z: values are copies of source slices, no interpolated in-between values
    assert set(np.unique(out).round(3)) <= {0.0, 100.0}
    np.testing.assert_array_equal(out[2], out[3])


def test_cubic_image_and_identity():
    img = np.random.default_rng(0).normal(size=(5, 6, 7)).astype(np.float32)
    out, info = resample_image(img, (1, 1, 1), (1, 1, 1), order=3)
    assert info.identity
    np.testing.assert_array_equal(out, img)


def test_median_spacing():
    assert median_spacing([(1, 2, 3), (3, 2, 1), (2, 2, 2)]) == (2.0, 2.0, 2.0)


@pytest.mark.parametrize("order", [0, 1])
def test_resample_back_channels(order):
    arr = np.random.default_rng(1).random((3, 4, 5, 6)).astype(np.float32)
    _, info = resample_image(np.zeros((8, 10, 12)), (1, 1, 1), (2, 2, 2), order=1)
    out = resample_back(arr, info, order=order, channel_axis=0)
    assert out.shape == (3, 8, 10, 12)
