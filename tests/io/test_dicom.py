"""DICOM files written here with pydicom; geometry checked against the header, SimpleITK
and nibabel (direction orthonormal, spacing and origin equal to the header within 1e-3)."""

import gzip

import nibabel as nib
import numpy as np
import pytest
import SimpleITK as sitk

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.io import Geometry, read_case, read_image, read_labels, write_labels

SAGITTAL = (0, 1, 0, 0, 0, -1)
CORONAL = (1, 0, 0, 0, 0, -1)
_c, _s = np.cos(np.radians(12)), np.sin(np.radians(12))
OBLIQUE = (1, 0, 0, 0, _c, _s)  # axial tilted by 12 degrees about x


def _slice(rng, shape=(6, 7)):
    return rng.integers(-500, 1500, shape).astype(np.int16)


def _orthonormal(m):
    return np.allclose(m.T @ m, np.eye(len(m)), atol=1e-6)


@pytest.mark.parametrize("iop", [SAGITTAL, CORONAL, OBLIQUE, (1, 0, 0, 0, 1, 0)])
def test_single_slice_geometry_valid_and_round_trips(tmp_path, make, rng, iop):
    pix = _slice(rng)
    path = make.pydicom_file(
        tmp_path / "s.dcm",
        pix,
        iop=iop,
        ipp=(12.5, -30.25, 40.0),
        spacing=(0.8, 0.5),
        modality="MR",
    )
    case = read_image(path)
    assert case.axes == "yx" and case.spacing == (0.8, 0.5)
    np.testing.assert_array_equal(case.image, pix)
    g = case.geometry
    assert _orthonormal(g.direction_matrix) and _orthonormal(g.plane.direction_matrix)
    # the 3D placement is the header's, and SimpleITK (GDCM) agrees
    np.testing.assert_allclose(g.plane.origin, (12.5, -30.25, 40.0), atol=1e-3)
    np.testing.assert_allclose(g.plane.direction_matrix[:, 0], iop[:3], atol=1e-6)
    np.testing.assert_allclose(g.plane.direction_matrix[:, 1], iop[3:], atol=1e-6)
    ref = sitk.ReadImage(str(path))
    np.testing.assert_allclose(g.plane.origin, ref.GetOrigin(), atol=1e-3)
    np.testing.assert_allclose(g.plane.direction, ref.GetDirection(), atol=1e-6)
    np.testing.assert_allclose(g.spacing, ref.GetSpacing()[1::-1], atol=1e-6)
    # a segmentation written with it lies on the slice (nibabel and SimpleITK read it so)
    seg = np.zeros(pix.shape, np.uint8)
    seg[2:4, 3:5] = 1
    nii = write_labels(tmp_path / "seg.nii.gz", seg, g)
    mha = write_labels(tmp_path / "seg.mha", seg, g)
    for out in (nii, mha):
        labels, lg, _ = read_labels(out)
        np.testing.assert_array_equal(labels, seg)
        assert lg.matches(g) and lg.plane.matches(g.plane)
        assert read_case(path, out).labels.sum() == 4
    itk = sitk.ReadImage(str(mha))
    np.testing.assert_allclose(itk.GetOrigin(), ref.GetOrigin(), atol=1e-3)
    np.testing.assert_allclose(itk.GetDirection(), ref.GetDirection(), atol=1e-6)
    affine = nib.load(nii).affine  # RAS: voxel (i=1, j=2) of the slice
    lps = np.asarray(ref.TransformIndexToPhysicalPoint((1, 2, 0)))
    np.testing.assert_allclose(affine @ [1, 2, 0, 1], [-lps[0], -lps[1], lps[2], 1], atol=1e-3)


def test_sagittal_series_matches_simpleitk(tmp_path, make, rng):
    vol = rng.integers(0, 900, (4, 5, 6)).astype(np.int16)
    folder = make.pydicom_series(tmp_path / "sag", vol, iop=SAGITTAL, spacing=(3.0, 0.7, 0.6))
    case = read_image(folder)
    reader = sitk.ImageSeriesReader()
    reader.SetFileNames(reader.GetGDCMSeriesFileNames(str(folder)))
    ref = reader.Execute()
    np.testing.assert_array_equal(case.image, sitk.GetArrayFromImage(ref))
    np.testing.assert_allclose(case.spacing, ref.GetSpacing()[::-1], atol=1e-3)
    np.testing.assert_allclose(case.geometry.origin, ref.GetOrigin(), atol=1e-3)
    np.testing.assert_allclose(case.geometry.direction, ref.GetDirection(), atol=1e-6)


def test_shuffled_files_sorted_along_normal(tmp_path, make, rng):
    vol = rng.integers(0, 900, (5, 4, 4)).astype(np.int16)
    folder = make.pydicom_series(tmp_path / "s", vol, iop=OBLIQUE)
    names = sorted(folder.iterdir())
    for i, p in enumerate(names):  # instance numbers and names no longer follow position
        p.rename(folder / f"x{(7 * i) % 5}.dcm.tmp")
    for p in folder.iterdir():
        p.rename(p.with_suffix(""))
    case = read_image(folder)
    np.testing.assert_array_equal(case.image, vol)
    np.testing.assert_allclose(case.geometry.origin, (-10.0, 20.0, 30.0), atol=1e-3)


def test_two_scouts_of_different_orientation_are_not_a_volume(tmp_path, make, rng):
    folder = tmp_path / "scouts"
    folder.mkdir()
    make.pydicom_file(folder / "a.dcm", _slice(rng), iop=(1, 0, 0, 0, 1, 0), instance=1)
    make.pydicom_file(folder / "b.dcm", _slice(rng, (6, 8)), iop=SAGITTAL, instance=2)
    case = read_image(folder)
    assert case.axes == "yx" and case.meta["n_series"] == 2
    assert "largest of 2" in case.meta["series_note"]
    other = read_image(folder, series=case.meta["series_uid"] + "#2")
    assert other.axes == "yx" and other.image.shape == (6, 8)
    with pytest.raises(ReadError, match="different image size, orientation.*pick one of"):
        read_image(folder, series=case.meta["series_uid"])
    with pytest.raises(ReadError, match="no series 9.9 here"):
        read_image(folder, series="9.9")


def test_parallel_slices_offset_in_plane_refused(tmp_path, make, rng):
    folder = tmp_path / "tilt"
    folder.mkdir()
    for k in range(3):  # 2 mm apart along z but shifted 1 mm in y each: gantry tilt
        make.pydicom_file(
            folder / f"{k}.dcm", _slice(rng), ipp=(0.0, 1.0 * k, 2.0 * k), instance=k + 1
        )
    with pytest.raises(ReadError, match="not stacked along their normal .*27 degrees"):
        read_image(folder)
    two = tmp_path / "two"
    two.mkdir()
    for k in range(2):
        make.pydicom_file(two / f"{k}.dcm", _slice(rng), ipp=(5.0 * k, 0.0, 2.0 * k))
    with pytest.raises(ReadError, match="not stacked along their normal"):
        read_image(two)


def test_same_position_refused_echoes_split(tmp_path, make, rng):
    folder = tmp_path / "dup"
    folder.mkdir()
    for k in range(4):
        make.pydicom_file(
            folder / f"{k}.dcm", _slice(rng), ipp=(0, 0, 2.0 * (k // 2)), instance=k + 1
        )
    with pytest.raises(ReadError, match="4 images at only 2 slice positions"):
        read_image(folder)
    echoes = tmp_path / "echo"
    echoes.mkdir()
    for k in range(4):
        make.pydicom_file(
            echoes / f"{k}.dcm",
            _slice(rng),
            ipp=(0, 0, 2.0 * (k // 2)),
            instance=k + 1,
            EchoNumbers=k % 2 + 1,
            modality="MR",
        )
    case = read_image(echoes)
    assert case.axes == "zyx" and case.image.shape[0] == 2 and case.spacing[0] == 2.0


def test_header_and_pixel_data_disagree(tmp_path, make, rng):
    path = make.pydicom_file(tmp_path / "rows.dcm", _slice(rng), Rows=9)
    with pytest.raises(
        ReadError,
        match=r"rows.dcm: header and pixel data disagree: the header "
        r"says 9 x 7 pixels .*126 bytes.* 84 bytes",
    ):
        read_image(path)
    short = make.pydicom_file(tmp_path / "cols.dcm", _slice(rng), Columns=5)
    with pytest.raises(ReadError, match="header and pixel data disagree"):
        read_image(short)


def test_no_preamble_implicit_and_gzip(tmp_path, make, rng):
    pix = _slice(rng)
    for name, kw in (
        ("np.dcm", {"preamble": False}),
        ("IM0001", {"preamble": False, "implicit": True}),
        ("ct.dcm.gz", {"gz": True}),
    ):
        path = make.pydicom_file(tmp_path / name, pix, ipp=(1.0, 2.0, 3.0), **kw)
        case = read_image(path)
        np.testing.assert_array_equal(case.image, pix)
        assert case.geometry.origin == (1.0, 2.0) and case.modality == "CT"
    gz_dir = tmp_path / "gz"
    gz_dir.mkdir()
    for k in range(3):
        make.pydicom_file(gz_dir / f"{k}.dcm.gz", pix + k, ipp=(0, 0, 1.5 * k), gz=True)
    assert read_image(gz_dir).image.shape == (3, 6, 7)


def test_gzip_garbage_is_one_line_error(tmp_path):
    (tmp_path / "bad.dcm.gz").write_bytes(gzip.compress(b"not dicom at all" * 20))
    with pytest.raises(SegEvalError) as info:
        read_image(tmp_path / "bad.dcm.gz")
    assert "bad.dcm.gz" in str(info.value) and "\n" not in str(info.value)


def test_rescale_slope_intercept(tmp_path, make):
    pix = np.array([[0, 100], [200, 4095]], np.uint16)
    path = make.pydicom_file(tmp_path / "r.dcm", pix, RescaleSlope=1, RescaleIntercept=-1024)
    case = read_image(path)
    assert case.image.dtype == np.int16 and case.image.tolist() == [[-1024, -924], [-824, 3071]]
    pet = make.pydicom_file(
        tmp_path / "p.dcm", pix, modality="PT", RescaleSlope=0.5, RescaleIntercept=0
    )
    assert read_image(pet).image.dtype == np.float32 and read_image(pet).image[1, 1] == 2047.5


def test_rle_compressed(tmp_path, make, rng):
    from pydicom import dcmread
    from pydicom.uid import RLELossless

    pix = _slice(rng)
    ds = dcmread(make.pydicom_file(tmp_path / "raw.dcm", pix))
    ds.compress(RLELossless)
    ds.save_as(tmp_path / "rle.dcm")
    np.testing.assert_array_equal(read_image(tmp_path / "rle.dcm").image, pix)


def test_jpeg_lossless_through_gdcm(tmp_path, make):
    vol = (np.arange(30).reshape(5, 6) * 7 - 50).astype(np.int16)
    path = make.gdcm_jpeg_lossless(tmp_path / "jpeg.dcm", vol, **{"0008|0060": "CT"})
    np.testing.assert_array_equal(read_image(path).image, vol)


_Q12 = np.array([1] + [3] * 63)  # quantisation: DC exact, every AC step 3


def _ct12(rng, frames=None):
    yy, xx = np.mgrid[0:20, 0:27]
    ramps = [1000 + 40 * yy + 30 * xx + rng.integers(0, 400, (20, 27)) for _ in range(frames or 1)]
    return np.stack(ramps) if frames else ramps[0]


@pytest.mark.parametrize(
    "name, frames, kw",
    [
        ("ct.dcm", None, {}),
        ("ct.dcm.gz", None, {"gz": True}),
        ("mf.dcm", 2, {"iop": None, "ipp": None}),
    ],
)
def test_12_bit_lossy_jpeg_through_gdcm(tmp_path, make, rng, name, frames, kw):
    """JPEG Extended 12-bit (1.2.840.10008.1.2.4.51): Pillow cannot decode it, GDCM does."""
    from pydicom import dcmread

    pix = _ct12(rng, frames)
    path = make.jpeg12_file(
        tmp_path / name, pix, _Q12, RescaleIntercept=-1024, RescaleSlope=1, **kw
    )
    case = read_image(path)
    want = (
        np.stack([make.jpeg12_expected(f, _Q12) for f in pix])
        if frames
        else make.jpeg12_expected(pix, _Q12)
    ) - 1024
    assert case.image.shape == want.shape and case.image.dtype == np.int16
    assert np.abs(case.image - want).max() <= 1  # libjpeg's integer inverse DCT
    assert "JPEG Extended (Process 2 and 4) (decoded by GDCM)" in case.meta["pixels"]
    if not kw.get("gz"):
        ds = dcmread(path)
        assert ds.file_meta.TransferSyntaxUID == "1.2.840.10008.1.2.4.51"
        with pytest.raises(Exception, match="Pillow does not support 'JPEG Extended'"):
            ds.pixel_array  # noqa: B018 - pydicom alone cannot
        np.testing.assert_array_equal(
            case.image, sitk.GetArrayFromImage(sitk.ReadImage(str(path))).reshape(want.shape)
        )


def test_12_bit_jpeg_series_is_a_volume(tmp_path, make, rng):
    folder = tmp_path / "ct"
    folder.mkdir()
    vol = _ct12(rng, 3)
    for k in range(3):
        make.jpeg12_file(folder / f"{k}.dcm", vol[k], _Q12, ipp=(0, 0, 2.0 * k), instance=k + 1)
    case = read_image(folder)
    assert case.axes == "zyx" and case.spacing == (2.0, 0.7, 0.6)
    assert np.abs(case.image - np.stack([make.jpeg12_expected(v, _Q12) for v in vol])).max() <= 1


@pytest.mark.parametrize(
    "damage, match",
    [
        ("cut stream", r"cannot decode JPEG Extended \(Process 2 and 4\) pixel data with GDCM"),
        ("cut file", "DICOM file is truncated or corrupt"),
    ],
)
def test_broken_12_bit_jpeg_is_one_line(tmp_path, make, rng, damage, match):
    from pydicom import dcmread
    from pydicom.encaps import encapsulate, generate_frames

    path = make.jpeg12_file(tmp_path / "ct.dcm", _ct12(rng), _Q12)
    if damage == "cut stream":
        ds = dcmread(path)
        frame = next(generate_frames(ds.PixelData, number_of_frames=1))
        ds.PixelData = encapsulate([frame[: len(frame) // 2]])
        ds.save_as(path)
    else:
        path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(ReadError, match=match) as info:
        read_image(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_not_an_image_object(tmp_path, make):
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian

    ds = Dataset()
    ds.SOPClassUID = "1.2.840.10008.5.1.4.1.1.481.3"
    ds.SOPInstanceUID = "1.2.3.4"
    ds.Modality = "RTSTRUCT"
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds.save_as(tmp_path / "rs.dcm", enforce_file_format=True)
    from napari_segeval.io import list_series

    for read in (read_image, list_series):  # the file named once (segeval inspect lists series)
        with pytest.raises(ReadError) as err:
            read(tmp_path / "rs.dcm")
        assert str(err.value) == (
            f"{tmp_path / 'rs.dcm'}: DICOM RTSTRUCT is an RT structure set "
            "(contours), not an image on a grid"
        )
    # next to a CT series it is skipped, not an error
    folder = make.pydicom_series(tmp_path / "ct", np.zeros((3, 4, 4), np.int16))
    (tmp_path / "rs.dcm").rename(folder / "rs.dcm")
    case = read_image(folder)
    assert case.image.shape == (3, 4, 4) and "RTSTRUCT" in case.meta["skipped"][0]


def test_corrupt_file_in_folder_refused(tmp_path, make):
    folder = make.pydicom_series(tmp_path / "ct", np.zeros((3, 4, 4), np.int16))
    (folder / "img001.dcm").write_bytes((folder / "img001.dcm").read_bytes()[:200])
    with pytest.raises(ReadError, match="img001.dcm"):
        read_image(folder)


def test_geometry_is_geometry_dataclass(tmp_path, make):
    path = make.pydicom_file(tmp_path / "a.dcm", np.zeros((4, 4), np.int16), iop=SAGITTAL)
    g = read_image(path).geometry
    assert isinstance(g.plane, Geometry) and Geometry.from_dict(g.to_dict()) == g


def test_ultrasound_images_and_loops_of_one_series_stay_apart(tmp_path, make, rng):
    from napari_segeval.io import list_series

    folder = tmp_path / "echo"
    folder.mkdir()
    for k in range(3):  # three separate views, no positions: not a volume
        make.pydicom_file(
            folder / f"still{k}.dcm",
            rng.integers(0, 255, (6, 7)).astype(np.uint8),
            modality="US",
            iop=None,
            ipp=None,
            spacing=None,
            instance=k + 1,
        )
    loop = rng.integers(0, 255, (5, 6, 7)).astype(np.uint8)
    make.pydicom_file(
        folder / "loop.dcm", loop, modality="US", iop=None, ipp=None, spacing=None, instance=9
    )
    series = list_series(folder)
    assert sorted(s.n_images for s in series) == [1, 1, 1, 5]
    assert "different objects" in series[0].split
    case = read_image(folder)
    assert case.axes == "tyx" and case.image.shape == (5, 6, 7)
    np.testing.assert_array_equal(case.image, loop)


def test_enhanced_frames_split_by_temporal_position(tmp_path, make, rng):
    from pydicom.dataset import Dataset

    vol = rng.integers(0, 900, (4, 5, 6)).astype(np.int16)
    frames = []
    for k in range(4):  # two time points of two slices each
        item = Dataset()
        pos = Dataset()
        pos.ImagePositionPatient = [0.0, 0.0, 3.0 * (k % 2)]
        content = Dataset()
        content.TemporalPositionIndex = k // 2 + 1
        item.PlanePositionSequence = [pos]
        item.FrameContentSequence = [content]
        frames.append(item)
    shared = Dataset()
    orient = Dataset()
    orient.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
    shared.PlaneOrientationSequence = [orient]
    path = make.pydicom_file(
        tmp_path / "dce.dcm",
        vol,
        modality="MR",
        iop=None,
        ipp=None,
        SharedFunctionalGroupsSequence=[shared],
        PerFrameFunctionalGroupsSequence=frames,
    )
    case = read_image(path)
    assert case.image.shape == (2, 5, 6) and case.spacing[0] == 3.0
    np.testing.assert_array_equal(case.image, vol[:2])
    second = read_image(path, series=case.meta["series_uid"] + "#2")
    np.testing.assert_array_equal(second.image, vol[2:])
