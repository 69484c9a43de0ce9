import nibabel as nib
import numpy as np
import pytest

from napari_segeval._errors import InvalidLabelsError, WriteError
from napari_segeval.io import Geometry, read_image, read_labels, write_image, write_labels

G3 = Geometry((2.0, 0.5, 0.5), (0.0, 0.0, 0.0), np.eye(3).ravel())


def test_refuses_overwrite_and_leaves_no_temp(tmp_path):
    path = write_labels(tmp_path / "p.nii.gz", np.zeros((2, 3, 4), np.uint8), G3)
    before = path.read_bytes()
    with pytest.raises(WriteError, match="p.nii.gz: file exists; pass overwrite=True"):
        write_labels(path, np.ones((2, 3, 4), np.uint8), G3)
    assert path.read_bytes() == before
    write_labels(path, np.ones((2, 3, 4), np.uint8), G3, overwrite=True)
    assert read_labels(path)[0].min() == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.nii.gz"]


def test_failed_write_keeps_target_and_cleans_up(tmp_path):
    path = write_image(tmp_path / "x.nii", np.zeros((2, 3), np.float32), Geometry.identity(2))
    before = path.read_bytes()
    with pytest.raises(WriteError, match="colour axis"):
        write_image(path, np.zeros((2, 3, 3), np.uint8), Geometry.identity(2), overwrite=True)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.nii"]


def test_float_perturbation_survives(tmp_path):
    base = np.full((2, 3, 4), 100.0)
    perturbed = base + np.random.default_rng(0).uniform(-0.01, 0.01, base.shape)
    for ext in (".nii.gz", ".mha", ".nrrd"):
        back = read_image(write_image(tmp_path / f"adv{ext}", perturbed, G3)).image
        assert back.dtype == np.float32
        np.testing.assert_array_equal(back, perturbed.astype(np.float32))
        assert np.abs(back - base).max() > 0.005


def test_mhd_writes_header_and_data(tmp_path):
    path = write_labels(tmp_path / "s.mhd", np.eye(3, dtype=np.uint8)[None], Geometry.identity(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.mhd", "s.zraw"]
    assert read_labels(path)[0].sum() == 3


def test_rgb_to_mha_not_nifti(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 255, (4, 5, 3)).astype(np.uint8)
    case = read_image(write_image(tmp_path / "c.mha", rgb, Geometry.identity(2)))
    np.testing.assert_array_equal(case.image, rgb)
    assert case.axes == "yxc"


def test_bad_inputs(tmp_path):
    with pytest.raises(WriteError, match="cannot write this format"):
        write_labels(tmp_path / "p.jpg", np.zeros((2, 2), np.uint8), Geometry.identity(2))
    with pytest.raises(WriteError, match="does not exist"):
        write_labels(tmp_path / "no" / "p.nii", np.zeros((2, 2), np.uint8), Geometry.identity(2))
    with pytest.raises(WriteError, match="does not fit a 3D geometry"):
        write_labels(tmp_path / "p.nii", np.zeros((2, 2), np.uint8), G3)
    with pytest.raises(InvalidLabelsError, match="negative"):
        write_labels(tmp_path / "p.nii", -np.ones((2, 2, 2), np.int8), G3)
    with pytest.raises(WriteError, match="32-bit"):
        write_image(tmp_path / "p.nii", np.full((2, 2), 2**40), Geometry.identity(2))


def test_dtypes(tmp_path):
    big = write_labels(tmp_path / "b.nii", np.full((2, 2, 2), 70000), G3)
    assert nib.load(big).get_data_dtype() == np.uint32
    ints = read_image(
        write_image(tmp_path / "i.nii", np.full((2, 2), -5, np.int64), Geometry.identity(2))
    )
    assert ints.image.dtype == np.int32 and ints.image.min() == -5
    bools = read_image(write_image(tmp_path / "m.mha", np.ones((2, 2), bool), Geometry.identity(2)))
    assert bools.image.dtype == np.uint8
