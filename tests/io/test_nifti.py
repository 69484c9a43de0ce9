import nibabel as nib
import numpy as np
import pytest
import SimpleITK as sitk

from napari_segeval._errors import InvalidImageError, ReadError
from napari_segeval.io import (
    Geometry,
    read_case,
    read_image,
    read_labels,
    write_image,
    write_labels,
)
from napari_segeval.io._nifti import affine_from_geometry

OBLIQUE = np.array(
    [[0.0, -0.8, 0.0, 12.5], [0.7, 0.0, 0.0, -30.25], [0.0, 0.0, 2.5, 7.0], [0, 0, 0, 1]]
)


def test_ras_to_lps_known_answer(tmp_path, make):
    data = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4)  # (i, j, k)
    affine = np.diag([0.5, 0.75, 3.0, 1.0])
    affine[:3, 3] = (10.0, 20.0, 30.0)
    case = read_image(make.nifti(tmp_path / "a.nii.gz", data, affine))
    assert case.image.shape == (4, 3, 2)
    assert case.image[3, 2, 1] == data[1, 2, 3]
    assert case.spacing == (3.0, 0.75, 0.5)
    assert case.geometry.origin == (-10.0, -20.0, 30.0)
    assert case.geometry.direction == (-1, 0, 0, 0, -1, 0, 0, 0, 1)


@pytest.mark.parametrize("affine", [np.diag([0.9, 0.9, 3.0, 1.0]), OBLIQUE])
def test_geometry_matches_simpleitk(tmp_path, make, affine):
    path = make.nifti(
        tmp_path / "b.nii", np.random.default_rng(0).random((5, 6, 7)).astype(np.float32), affine
    )
    case = read_image(path)
    ref = sitk.ReadImage(str(path))
    np.testing.assert_array_equal(case.image, sitk.GetArrayFromImage(ref))
    np.testing.assert_allclose(case.spacing, ref.GetSpacing()[::-1], rtol=1e-6)
    np.testing.assert_allclose(case.geometry.origin, ref.GetOrigin(), atol=1e-5)
    np.testing.assert_allclose(case.geometry.direction, ref.GetDirection(), atol=1e-6)


@pytest.mark.parametrize("ext", [".nii", ".nii.gz"])
def test_round_trip_exact(tmp_path, make, ext):
    data = (np.random.default_rng(1).random((6, 5, 4)) * 1000 - 500).astype(np.float32)
    first = read_image(make.nifti(tmp_path / f"src{ext}", data, OBLIQUE))
    out = write_image(tmp_path / f"copy{ext}", first.image, first.geometry)
    second = read_image(out)
    np.testing.assert_array_equal(second.image, first.image)
    assert second.image.dtype == first.image.dtype
    assert second.geometry == first.geometry


def test_label_written_with_image_geometry_has_source_affine(tmp_path, make):
    src = make.nifti(tmp_path / "img.nii.gz", np.zeros((6, 5, 4), np.int16), OBLIQUE)
    case = read_image(src)
    seg = write_labels(tmp_path / "seg.nii.gz", np.ones(case.image.shape, np.uint8), case.geometry)
    np.testing.assert_allclose(nib.load(seg).affine, nib.load(src).affine, atol=1e-6)
    assert nib.load(seg).header.get_sform(coded=True)[1] == 1


def test_affine_from_geometry_inverts_reader(tmp_path, make):
    g = Geometry((2.0, 0.5, 0.25), (1.0, -2.0, 3.0), (0, 1, 0, -1, 0, 0, 0, 0, 1))
    path = write_image(tmp_path / "g.nii", np.zeros((2, 3, 4), np.float32), g)
    assert read_image(path).geometry == g
    np.testing.assert_allclose(nib.load(path).affine, affine_from_geometry(g))


def test_2d_nifti(tmp_path, make):
    img = read_image(
        make.nifti(tmp_path / "p.nii", np.zeros((4, 3), np.uint8), np.diag([0.5, 2, 1, 1]))
    )
    assert img.axes == "yx" and img.image.shape == (3, 4) and img.spacing == (2.0, 0.5)


def test_4d_singleton_and_sequence(tmp_path, make):
    vol = read_image(make.nifti(tmp_path / "v.nii", np.zeros((4, 3, 2, 1), np.int16), np.eye(4)))
    assert vol.axes == "zyx" and vol.image.shape == (2, 3, 4)
    seq = read_image(
        make.nifti(tmp_path / "s.nii", np.zeros((4, 3, 1, 5), np.uint8), np.diag([0.3, 0.3, 1, 1]))
    )
    assert (
        seq.axes == "tyx"
        and seq.image.shape == (5, 3, 4)
        and seq.spacing == pytest.approx((1.0, 0.3, 0.3))
    )


def test_5d_rejected(tmp_path, make):
    with pytest.raises(InvalidImageError, match="5D"):
        read_image(make.nifti(tmp_path / "f.nii", np.zeros((4, 3, 2, 2, 2), np.int16), np.eye(4)))


def test_float_labels_with_integer_values_are_cast(tmp_path, make):
    data = np.zeros((4, 4, 2), np.float32)
    data[1:3, 1:3] = 2.0
    labels, geometry, _ = read_labels(make.nifti(tmp_path / "seg.nii.gz", data, np.eye(4)))
    assert labels.dtype == np.uint8 and labels.max() == 2 and geometry.ndim == 3


def test_truncated_gz_is_read_error(tmp_path, make):
    path = make.nifti(
        tmp_path / "t.nii.gz",
        np.random.default_rng(0).random((8, 8, 8)).astype(np.float32),
        np.eye(4),
    )
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(ReadError, match="t.nii.gz"):
        read_image(path)


def test_1d_rejected(tmp_path):
    nib.save(nib.Nifti1Image(np.zeros(5, np.uint8), np.eye(4)), tmp_path / "line.nii")
    with pytest.raises(InvalidImageError, match="line.nii: unsupported NIfTI dimensionality 1D"):
        read_image(tmp_path / "line.nii")


def test_gz_trailer_checked(tmp_path, make):
    path = make.nifti(tmp_path / "c.nii.gz", np.zeros((4, 4, 4), np.int16), np.eye(4))
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(ReadError, match="c.nii.gz: cannot read NIfTI"):
        read_image(path)


def test_nifti2_gz(tmp_path):
    img = nib.Nifti2Image(np.arange(24, dtype=np.int16).reshape(2, 3, 4), np.diag([2, 3, 4, 1]))
    nib.save(img, tmp_path / "n2.nii.gz")
    case = read_image(tmp_path / "n2.nii.gz")
    assert case.image.shape == (4, 3, 2) and case.spacing == (4.0, 3.0, 2.0)


def test_4d_time_series(tmp_path, make):
    data = np.random.default_rng(0).random((5, 4, 3, 6)).astype(np.float32)  # (X, Y, Z, T)
    affine = OBLIQUE.copy()
    img = nib.Nifti1Image(data, affine)
    img.header.set_zooms((0.8, 0.7, 2.5, 2.0))
    img.set_sform(affine, code=1)
    nib.save(img, tmp_path / "bold.nii.gz")
    case = read_image(tmp_path / "bold.nii.gz")
    assert case.axes == "tzyx" and case.image.shape == (6, 3, 4, 5) and case.is_time_series
    assert case.image[2, 1, 3, 4] == data[4, 3, 1, 2] and case.meta["time_step"] == 2.0
    vol = read_image(tmp_path / "bold.nii.gz", volume=2)
    ref = read_image(make.nifti(tmp_path / "v2.nii", np.ascontiguousarray(data[..., 2]), affine))
    np.testing.assert_array_equal(vol.image, ref.image)
    assert vol.axes == "zyx" and vol.geometry.matches(ref.geometry)
    assert vol.meta["volume"] == 2 and vol.meta["n_volumes"] == 6
    with pytest.raises(ReadError, match="volume 6 does not exist .*0..5"):
        read_image(tmp_path / "bold.nii.gz", volume=6)
    with pytest.raises(ReadError, match="a volume can only be chosen in a 4D time series"):
        read_image(tmp_path / "v2.nii", volume=0)
    # 4D labels round-trip through the writers; a 3D map needs a chosen volume
    seg = (case.image > 0.5).astype(np.uint8)
    for ext in (".nii.gz", ".mha"):
        out = write_labels(tmp_path / f"seg{ext}", seg, case.geometry)
        labels, g, _ = read_labels(out)
        np.testing.assert_array_equal(labels, seg)
        assert g.matches(case.geometry)
        both = read_case(tmp_path / "bold.nii.gz", out, volume=1)
        np.testing.assert_array_equal(both.labels, seg[1])
    three = write_labels(tmp_path / "one.nii.gz", seg[0], vol.geometry)
    with pytest.raises(ReadError, match="time series of 6 volumes .*--volume"):
        read_case(tmp_path / "bold.nii.gz", three)
    assert read_case(tmp_path / "bold.nii.gz", three, volume=0).labels.shape == (3, 4, 5)


def test_one_slice_nifti_is_2d_with_its_plane(tmp_path, make):
    sag = np.array([[0, 0, -2.0, 10], [-0.5, 0, 0, 20], [0, 0.7, 0, -5], [0, 0, 0, 1]])
    path = make.nifti(tmp_path / "s.nii.gz", np.zeros((4, 3, 1), np.int16), sag)
    case = read_image(path)
    assert (
        case.axes == "yx"
        and case.image.shape == (3, 4)
        and case.spacing == pytest.approx((0.7, 0.5))
    )
    ref = sitk.ReadImage(str(path))
    np.testing.assert_allclose(case.geometry.plane.origin, ref.GetOrigin(), atol=1e-4)
    np.testing.assert_allclose(case.geometry.plane.direction, ref.GetDirection(), atol=1e-6)
    out = write_image(tmp_path / "copy.nii.gz", case.image, case.geometry)
    np.testing.assert_allclose(nib.load(out).affine, sag, atol=1e-5)
    assert nib.load(out).shape == (4, 3, 1)


def test_nan_padding_opens(tmp_path, make):
    data = np.random.default_rng(0).random((4, 5, 3)).astype(np.float32) * 100 + 10
    data[0] = np.nan
    case = read_image(make.nifti(tmp_path / "mni.nii.gz", data, np.diag([2, 2, 2, 1.0])))
    assert case.meta["nan_count"] == 15 and np.isnan(case.image).sum() == 15
    assert "15 of 60 voxels are NaN" in case.meta["warnings"][0]
    assert case.modality == "other"
    with pytest.raises(InvalidImageError, match="every voxel is NaN"):
        read_image(
            make.nifti(tmp_path / "all.nii", np.full((2, 2, 2), np.nan, np.float32), np.eye(4))
        )


@pytest.mark.parametrize("name", ["sub.dtseries.nii", "plain.nii"])
def test_cifti_refused(tmp_path, name):
    img = nib.Nifti2Image(np.zeros((1, 1, 1, 1, 3, 7), np.float32), np.eye(4))
    img.header.set_intent(3002)  # NIFTI_INTENT_CONNECTIVITY_DENSE_SERIES
    nib.save(img, tmp_path / name)
    with pytest.raises(InvalidImageError) as info:
        read_image(tmp_path / name)
    assert str(info.value) == (
        f"{tmp_path / name}: CIFTI is not supported "
        "(surface/grayordinate data, not an image on a grid)"
    )
