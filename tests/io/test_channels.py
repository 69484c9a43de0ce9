"""Multi-channel volumes: a 4D file's fourth axis or one file per channel, read on request."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import GeometryMismatchError, ReadError
from napari_segeval.io import (
    Geometry,
    read_case,
    read_channels,
    read_image,
    select_channel,
    write_image,
    write_labels,
)

G = Geometry((3.0, 0.8, 0.7), (10.0, -5.0, 2.0), tuple(np.eye(3).ravel()))


def _image():
    rng = np.random.default_rng(1)
    return rng.normal(0, 1, (3, 4, 6, 5)).astype(np.float32)


def _write_4d(path, image, geometry):
    import nibabel as nib

    from napari_segeval.io._nifti import affine_from_geometry

    nib.save(
        nib.Nifti1Image(np.transpose(image, (3, 2, 1, 0)), affine_from_geometry(geometry)),
        str(path),
    )
    return path


def test_a_4d_file_is_channels_on_request_and_a_time_series_otherwise(tmp_path):
    image = _image()
    path = _write_4d(tmp_path / "mr.nii.gz", image, G)
    seg = write_labels(tmp_path / "seg.nii.gz", (image[0] > 0).astype(np.uint8), G)
    assert read_image(path).axes == "tzyx"
    case = read_channels([path], seg, n_channels=3, modality="MR")
    assert case.axes == "czyx" and case.n_channels == 3 and case.meta["n_channels"] == 3
    assert case.spatial_shape == (4, 6, 5) and case.geometry.matches(G)
    np.testing.assert_array_equal(case.image, image)
    np.testing.assert_array_equal(case.labels, image[0] > 0)
    one = select_channel(case, 2)
    np.testing.assert_array_equal(one.image, image[2])
    assert one.axes == "zyx" and one.labels is case.labels
    with pytest.raises(ReadError, match="names 4 channels, the image has 3"):
        read_channels([path], n_channels=4)
    with pytest.raises(ReadError, match="channel 3 does not exist"):
        select_channel(case, 3)


def test_one_file_per_channel_stacks_on_one_grid(tmp_path):
    image = _image()
    paths = [write_image(tmp_path / f"p_{c:04d}.nii.gz", image[c], G) for c in range(3)]
    seg = write_labels(tmp_path / "p.nii.gz", np.ones((4, 6, 5), np.uint8), G)
    case = read_channels(paths, seg)
    assert case.axes == "czyx" and case.meta["channel_paths"] == [str(p) for p in paths]
    np.testing.assert_array_equal(case.image, image)
    single = read_channels(paths[:1], seg)  # one channel: exactly read_case's case
    ref = read_case(paths[0], seg)
    assert single.axes == "zyx" and np.array_equal(single.image, ref.image)
    moved = Geometry((3.0, 0.8, 0.7), (11.0, -5.0, 2.0), tuple(np.eye(3).ravel()))
    write_image(tmp_path / "p_0001.nii.gz", image[1], moved, overwrite=True)
    with pytest.raises(GeometryMismatchError, match="p_0001"):
        read_channels(paths, seg)
