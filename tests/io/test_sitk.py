import numpy as np
import pytest
import SimpleITK as sitk

from napari_segeval._errors import InvalidImageError, ReadError
from napari_segeval.io import Geometry, read_image, read_labels, write_image, write_labels

GEOM = Geometry((2.5, 0.7, 0.6), (-10.5, 3.25, 100.0), (0, 1, 0, -1, 0, 0, 0, 0, 1))


@pytest.mark.parametrize("ext", [".mha", ".mhd", ".nrrd"])
def test_round_trip_exact(tmp_path, ext):
    data = np.random.default_rng(2).normal(size=(3, 5, 4)).astype(np.float32)
    first = write_image(tmp_path / f"a{ext}", data, GEOM)
    case = read_image(first)
    np.testing.assert_array_equal(case.image, data)
    assert case.geometry == GEOM and case.axes == "zyx"
    second = read_image(write_image(tmp_path / f"b{ext}", case.image, case.geometry))
    np.testing.assert_array_equal(second.image, case.image)
    assert second.geometry == case.geometry


@pytest.mark.parametrize("ext", [".mha", ".nrrd"])
def test_labels_round_trip(tmp_path, ext):
    labels = np.random.default_rng(3).integers(0, 4, (3, 5, 4)).astype(np.uint8)
    out, geometry, _ = read_labels(write_labels(tmp_path / f"s{ext}", labels, GEOM))
    np.testing.assert_array_equal(out, labels)
    assert geometry == GEOM


def test_geometry_agrees_with_simpleitk(tmp_path, make):
    path = make.sitk_file(
        tmp_path / "x.nrrd", np.zeros((2, 3, 4), np.int16), (3.0, 0.5, 0.25), (1, 2, 3)
    )
    case = read_image(path)
    ref = sitk.ReadImage(str(path))
    assert case.spacing == ref.GetSpacing()[::-1] and case.geometry.origin == ref.GetOrigin()


def test_rgb_2d_mha(tmp_path, make):
    rgb = np.random.default_rng(0).integers(0, 255, (5, 6, 3)).astype(np.uint8)
    case = read_image(make.sitk_file(tmp_path / "c.mha", rgb, vector=True))
    assert case.axes == "yxc" and case.is_rgb and case.modality == "endoscopy"
    np.testing.assert_array_equal(case.image, rgb)


def test_dicom_series_largest_series_and_modality(tmp_path, make):
    vol = (np.arange(5 * 6 * 7).reshape(5, 6, 7) % 300 - 1000).astype(np.int16)
    folder = make.dicom_series(tmp_path / "dcm", vol, series_uid="1.2.3.4.100")
    make.dicom_series(folder, vol[:2], series_uid="1.2.3.4.200", prefix="other", modality="MR")
    case = read_image(folder)
    np.testing.assert_array_equal(case.image, vol)
    assert case.axes == "zyx" and case.modality == "CT"
    assert case.spacing == pytest.approx((2.5, 0.7, 0.7))
    assert case.geometry.origin == pytest.approx((-10.0, 20.0, 30.0))
    assert case.meta["series_uid"] == "1.2.3.4.100" and case.meta["n_series"] == 2
    assert case.meta["dicom_modality"] == "CT"


def test_dicom_modality_tag_beats_heuristic(tmp_path, make):
    folder = make.dicom_series(tmp_path / "mr", np.full((3, 4, 4), -900, np.int16), modality="MR")
    assert read_image(folder).modality == "MR"
    assert read_image(folder, modality="CT").modality == "CT"


def test_multiframe_dicom_us_is_video(tmp_path, make):
    frames = np.random.default_rng(0).integers(0, 255, (4, 8, 9)).astype(np.uint8)
    case = read_image(make.multiframe_dicom(tmp_path / "echo.dcm", frames, "US"))
    assert case.axes == "tyx" and case.modality == "US"
    np.testing.assert_array_equal(case.image, frames)
    ct = read_image(make.multiframe_dicom(tmp_path / "ct.dcm", frames, "CT"))
    assert ct.axes == "zyx" and ct.modality == "CT"


def test_dicom_without_marker_rejected(tmp_path):
    path = tmp_path / "x.dcm"
    path.write_bytes(b"\0" * 300)
    with pytest.raises(ReadError, match="x.dcm: not a DICOM file"):
        read_image(path)


def test_camus_sequence_rules(tmp_path, make):
    frames = np.zeros((6, 10, 8), np.uint8)
    named = read_image(make.sitk_file(tmp_path / "patient0001_2CH_sequence.mhd", frames, (1, 1, 1)))
    assert named.axes == "tyx" and named.modality == "US"
    by_spacing = read_image(make.sitk_file(tmp_path / "p2.mhd", frames, (1.0, 0.154, 0.308)))
    assert by_spacing.axes == "tyx"
    gt, _, _ = read_labels(make.sitk_file(tmp_path / "p_sequence_gt.mhd", frames, (1, 1, 1)))
    assert gt.shape == frames.shape
    # not a sequence: 16-bit pixels, or a non-unit slice step, or a NRRD file
    assert (
        read_image(
            make.sitk_file(tmp_path / "ct.mhd", frames.astype(np.int16), (1.0, 0.2, 0.2))
        ).axes
        == "zyx"
    )
    assert read_image(make.sitk_file(tmp_path / "v.mhd", frames, (1.5, 0.2, 0.2))).axes == "zyx"
    assert read_image(make.sitk_file(tmp_path / "sequence.nrrd", frames, (1, 1, 1))).axes == "zyx"


def test_unsupported_dimensions(tmp_path, make):
    line = tmp_path / "line.nrrd"
    line.write_bytes(b"NRRD0004\ntype: uint8\ndimension: 1\nsizes: 5\nencoding: raw\n\n12345")
    with pytest.raises(ReadError, match="line.nrrd"):  # SimpleITK has no 1D images
        read_image(line)
    four = read_image(make.sitk_file(tmp_path / "four.mha", np.zeros((2, 2, 3, 4), np.float32)))
    assert four.axes == "tzyx" and four.image.shape == (2, 2, 3, 4)  # time axis apart
    sheared = sitk.GetImageFromArray(np.zeros((2, 2, 3, 4), np.float32), isVector=False)
    d = np.eye(4)
    d[[0, 3]] = d[[3, 0]]  # the 4th index axis along x: not a time axis
    sheared.SetDirection(tuple(d.ravel()))
    sitk.WriteImage(sheared, str(tmp_path / "mixed.mha"))
    with pytest.raises(InvalidImageError, match="4D"):
        read_image(tmp_path / "mixed.mha")
    squeezed = read_image(make.sitk_file(tmp_path / "one.mha", np.zeros((1, 2, 3, 4), np.float32)))
    assert squeezed.image.shape == (2, 3, 4)


def test_missing_raw_file(tmp_path, make):
    path = make.sitk_file(tmp_path / "h.mhd", np.zeros((2, 3, 4), np.int16))
    next(tmp_path.glob("h.*raw")).unlink()
    with pytest.raises(ReadError, match="h.mhd"):
        read_image(path)


def test_infinite_intensities_rejected_nan_kept(tmp_path, make):
    data = np.zeros((2, 3, 4), np.float32)
    data[1, 1, 1] = np.nan
    data[0, 0, 0] = np.inf
    with pytest.raises(InvalidImageError, match=r"inf\.mha: 1 of 24 voxels are infinite"):
        read_image(make.sitk_file(tmp_path / "inf.mha", data))
    data[0, 0, 0] = 0
    case = read_image(make.sitk_file(tmp_path / "nan.mha", data))
    assert case.meta["nan_count"] == 1 and np.isnan(case.image[1, 1, 1])


def test_dicom_series_with_missing_or_broken_slice(tmp_path, make):
    vol = np.zeros((5, 6, 7), np.int16)
    gap = make.dicom_series(tmp_path / "gap", vol)
    (gap / "slice002.dcm").unlink()
    with pytest.raises(ReadError, match="gap: series .* slice spacing is not uniform"):
        read_image(gap)
    cut = make.dicom_series(tmp_path / "cut", vol)
    data = (cut / "slice001.dcm").read_bytes()
    (cut / "slice001.dcm").write_bytes(data[:-60])
    with pytest.raises(ReadError, match="slice001.dcm: header and pixel data disagree"):
        read_image(cut)


def test_nrrd_cut_gzip_trailer(tmp_path):
    path = write_image(tmp_path / "z.nrrd", np.ones((2, 3, 4), np.float32), GEOM)
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ReadError, match="z.nrrd: NRRD data is truncated"):
        read_image(path)


@pytest.mark.parametrize("compress", [False, True])
def test_metaimage_cut_or_missing_data_is_named(tmp_path, compress):
    arr = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4)
    mha = tmp_path / "cut.mha"
    sitk.WriteImage(sitk.GetImageFromArray(arr), str(mha), compress)
    data = mha.read_bytes()
    mha.write_bytes(data[:-10])
    header_end = data.index(b"LOCAL\n") + len(b"LOCAL\n")
    expected = len(data) - header_end
    with pytest.raises(ReadError) as err:
        read_image(mha)
    assert str(err.value) == (
        f"{mha}: MetaImage data is truncated ({expected - 10} of {expected} bytes)"
    )
    mha.write_bytes(data[:40])
    with pytest.raises(ReadError) as err:
        read_image(mha)
    assert str(err.value) == f"{mha}: MetaImage header is truncated (no ElementDataFile line)"
    mhd = tmp_path / "split.mhd"
    sitk.WriteImage(sitk.GetImageFromArray(arr), str(mhd), compress)
    raw = next(tmp_path.glob("split.*raw"))
    payload = raw.read_bytes()
    raw.write_bytes(payload[:-10])
    with pytest.raises(ReadError) as err:
        read_image(mhd)
    assert str(err.value) == (
        f"{mhd}: MetaImage data is truncated ({len(payload) - 10} of "
        f"{len(payload)} bytes in {raw.name})"
    )
    raw.unlink()
    with pytest.raises(ReadError) as err:
        read_image(mhd)
    assert str(err.value) == f"{mhd}: its data file {raw.name} does not exist"


def test_analyze_hdr_img(tmp_path, capfd):
    import nibabel as nib

    data = np.arange(4 * 3 * 2, dtype=np.int16).reshape(4, 3, 2)  # (i, j, k)
    nib.AnalyzeImage(data, np.diag([2.0, 3.0, 4.0, 1.0])).to_filename(tmp_path / "brain.hdr")
    for name in ("brain.hdr", "brain.img"):
        case = read_image(tmp_path / name)
        np.testing.assert_array_equal(case.image, data.T)
        hdr = nib.load(tmp_path / "brain.hdr").header
        assert case.spacing == tuple(float(z) for z in hdr.get_zooms()[::-1])
        ref = sitk.ReadImage(str(tmp_path / "brain.hdr"))
        assert case.geometry.origin == ref.GetOrigin() and case.geometry.is_orthonormal()
        assert "Analyze 7.5 stores no reliable orientation" in case.meta["warnings"][0]
    capfd.readouterr()
    read_image(tmp_path / "brain.hdr")
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # ITK's "Analyze file is deprecated" warning is silenced


def test_minc2(tmp_path):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    g = Geometry((0.7, 0.6, 0.5), (1.0, 2.0, 3.0), (0, 1, 0, -1, 0, 0, 0, 0, 1))
    img = sitk.GetImageFromArray(data)
    img.SetSpacing(g.spacing[::-1])
    img.SetOrigin(g.origin)
    img.SetDirection(g.direction)
    sitk.WriteImage(img, str(tmp_path / "t1.mnc"))
    assert (tmp_path / "t1.mnc").read_bytes()[:4] == b"\x89HDF"  # MINC2 is HDF5
    case = read_image(tmp_path / "t1.mnc")
    np.testing.assert_array_equal(case.image, data)
    assert case.geometry.matches(g, atol=1e-3)


def test_img_without_hdr_unsupported(tmp_path):
    (tmp_path / "disk.img").write_bytes(b"\0" * 64)
    with pytest.raises(ReadError, match="disk.img: unsupported file type"):
        read_image(tmp_path / "disk.img")
    (tmp_path / "x.hdr").write_bytes(b"\0" * 10)
    with pytest.raises(ReadError) as info:
        read_image(tmp_path / "x.hdr")
    assert "\n" not in str(info.value) and "Error" not in str(info.value)
