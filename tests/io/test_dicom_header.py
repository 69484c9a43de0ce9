"""Header values used as they are: invalid ones are reported, never replaced silently."""

import numpy as np
import pytest
from pydicom.dataset import Dataset

from napari_segeval._errors import ReadError
from napari_segeval.io import list_series, read_image


def _seq(**kw):
    ds = Dataset()
    for k, v in kw.items():
        setattr(ds, k, v)
    return [ds]


def test_pixel_spacing_zero_is_reported_not_replaced(tmp_path, make):
    case = read_image(
        make.pydicom_file(tmp_path / "a.dcm", np.zeros((4, 5), np.int16), spacing=(0, 0))
    )
    assert case.meta["has_geometry"] is False and case.geometry.plane is None
    assert case.meta["warnings"] == [
        (
            "PixelSpacing (0, 0) is not a positive pixel size: the image is shown in pixel units, "
            "not mm"
        )
    ]


def test_zero_orientation_is_reported_not_identity(tmp_path, make):
    case = read_image(
        make.pydicom_file(
            tmp_path / "a.dcm",
            np.zeros((4, 5), np.int16),
            iop=(0, 0, 0, 0, 0, 0),
            spacing=(0.7, 0.6),
        )
    )
    assert case.geometry.plane is None and case.spacing == (0.7, 0.6)
    assert any(
        "ImageOrientationPatient (0, 0, 0, 0, 0, 0) is not two unit vectors" in w
        for w in case.meta["warnings"]
    )


def test_skewed_orientation_is_invalid(tmp_path, make):
    case = read_image(
        make.pydicom_file(
            tmp_path / "a.dcm", np.zeros((4, 5), np.int16), iop=(1, 0, 0, 0.5, 0.866, 0)
        )
    )
    assert case.geometry.plane is None and "right angles" in case.meta["warnings"][0]


def test_imager_pixel_spacing_for_projection(tmp_path, make):
    case = read_image(
        make.pydicom_file(
            tmp_path / "cr.dcm",
            np.zeros((4, 5), np.uint16),
            modality="CR",
            spacing=None,
            iop=None,
            ipp=None,
            ImagerPixelSpacing=[0.139, 0.14],
        )
    )
    assert case.spacing == (0.139, 0.14) and case.meta["spacing_source"] == "ImagerPixelSpacing"


def _us_region(dx=0.03, dy=0.025, units=3, box=(0, 0, 99, 79)):
    return _seq(
        RegionSpatialFormat=1,
        RegionDataType=1,
        RegionFlags=0,
        RegionLocationMinX0=box[0],
        RegionLocationMinY0=box[1],
        RegionLocationMaxX1=box[2],
        RegionLocationMaxY1=box[3],
        PhysicalUnitsXDirection=units,
        PhysicalUnitsYDirection=units,
        PhysicalDeltaX=dx,
        PhysicalDeltaY=dy,
    )[0]


def test_ultrasound_region_calibration(tmp_path, make, rng):
    frames = rng.integers(0, 255, (3, 8, 10)).astype(np.uint8)
    path = make.pydicom_file(
        tmp_path / "us.dcm",
        frames,
        modality="US",
        spacing=None,
        iop=None,
        ipp=None,
        thickness=None,
        SequenceOfUltrasoundRegions=[_us_region()],
    )
    case = read_image(path)
    assert case.axes == "tyx" and case.modality == "US"
    assert case.spacing == pytest.approx((1.0, 0.25, 0.3), abs=1e-9)
    assert case.meta["spacing_source"] == "ultrasound regions" and case.meta["warnings"] == []
    np.testing.assert_array_equal(case.image, frames)
    two = make.pydicom_file(
        tmp_path / "us2.dcm",
        frames[0],
        modality="US",
        spacing=None,
        iop=None,
        ipp=None,
        SequenceOfUltrasoundRegions=[_us_region(), _us_region(0.05, 0.05, box=(0, 0, 199, 199))],
    )
    case = read_image(two)
    assert case.spacing == pytest.approx((0.5, 0.5))
    assert "2 ultrasound regions have different pixel sizes; region 2" in case.meta["warnings"][0]
    uncal = make.pydicom_file(
        tmp_path / "us3.dcm",
        frames[0],
        modality="US",
        spacing=None,
        iop=None,
        ipp=None,
        SequenceOfUltrasoundRegions=[_us_region(units=0)],
    )
    case = read_image(uncal)
    assert case.meta["has_geometry"] is False
    assert "no calibration in cm" in case.meta["warnings"][0]


def _enhanced_mr(path, make, vol, between, positions):
    frames = []
    for z in positions:
        item = Dataset()
        item.PlanePositionSequence = _seq(ImagePositionPatient=[-5.0, 7.0, float(z)])
        frames.append(item)
    shared = Dataset()
    shared.PixelMeasuresSequence = _seq(
        PixelSpacing=[0.9, 0.8], SliceThickness=2.0, SpacingBetweenSlices=between
    )
    shared.PlaneOrientationSequence = _seq(ImageOrientationPatient=[1, 0, 0, 0, 1, 0])
    return make.pydicom_file(
        path,
        vol,
        modality="MR",
        iop=None,
        ipp=None,
        spacing=None,
        thickness=None,
        SOPClassUID="1.2.840.10008.5.1.4.1.1.4.1",
        SharedFunctionalGroupsSequence=[shared],
        PerFrameFunctionalGroupsSequence=frames,
    )


def test_enhanced_mr_spacing_between_slices(tmp_path, make, rng):
    vol = rng.integers(0, 900, (4, 5, 6)).astype(np.int16)
    case = read_image(_enhanced_mr(tmp_path / "e.dcm", make, vol, 3.5, [10, 13.5, 17, 20.5]))
    assert case.axes == "zyx" and case.spacing == pytest.approx((3.5, 0.9, 0.8))
    assert case.geometry.origin == pytest.approx((-5.0, 7.0, 10.0)) and case.meta["warnings"] == []
    # frames stored top-down are sorted along the normal
    case = read_image(_enhanced_mr(tmp_path / "r.dcm", make, vol, 3.5, [20.5, 17, 13.5, 10]))
    np.testing.assert_array_equal(case.image, vol[::-1])
    case = read_image(_enhanced_mr(tmp_path / "w.dcm", make, vol, 5.0, [10, 13.5, 17, 20.5]))
    assert case.spacing[0] == pytest.approx(3.5)
    assert (
        "SpacingBetweenSlices says 5 mm but the slice positions are 3.5 mm apart"
        in case.meta["warnings"][0]
    )


def _rtdose(path, make, dose, offsets, **kw):
    return make.pydicom_file(
        path,
        dose,
        modality="RTDOSE",
        frames=True,
        ipp=(-20.0, -30.0, 5.0),
        spacing=(2.0, 2.5),
        thickness=None,
        SOPClassUID="1.2.840.10008.5.1.4.1.1.481.2",
        GridFrameOffsetVector=list(offsets),
        DoseGridScaling=0.001,
        DoseUnits="GY",
        DoseType="PHYSICAL",
        **kw,
    )


def test_rt_dose_single_frame_and_volume(tmp_path, make, rng):
    dose = rng.integers(0, 60000, (1, 4, 5)).astype(np.uint32)
    case = read_image(_rtdose(tmp_path / "d1.dcm", make, dose, [0.0]))
    assert case.axes == "yx" and case.image.dtype == np.float32
    np.testing.assert_allclose(case.image, dose[0] * 0.001, rtol=1e-6)
    assert case.geometry.plane.origin == (-20.0, -30.0, 5.0) and case.meta["dose_units"] == "GY"
    vol = rng.integers(0, 60000, (3, 4, 5)).astype(np.uint32)
    case = read_image(_rtdose(tmp_path / "d3.dcm", make, vol, [0.0, -3.0, -6.0]))
    assert case.axes == "zyx" and case.spacing == pytest.approx((3.0, 2.0, 2.5))
    assert case.geometry.origin == pytest.approx((-20.0, -30.0, -1.0))
    np.testing.assert_allclose(case.image, vol[::-1] * 0.001, rtol=1e-6)
    uneven = _rtdose(tmp_path / "du.dcm", make, vol, [0.0, 3.0, 7.0])
    with pytest.raises(ReadError, match="slice spacing is not uniform"):
        read_image(uneven)


def test_dicomdir_export(tmp_path, make, rng):
    from pydicom import dcmread
    from pydicom.fileset import FileSet

    src = tmp_path / "src"
    vol = rng.integers(0, 900, (3, 4, 5)).astype(np.int16)
    make.pydicom_series(
        src,
        vol,
        PatientID="P1",
        PatientName="Doe^J",
        StudyDate="20240101",
        StudyTime="120000",
        StudyID="1",
        AccessionNumber="1",
    )
    make.pydicom_file(
        src / "mr.dcm",
        vol[0],
        modality="MR",
        series_uid="1.2.3.99",
        PatientID="P1",
        PatientName="Doe^J",
        StudyDate="20240101",
        StudyTime="120000",
        StudyID="1",
        AccessionNumber="1",
    )
    fs = FileSet()
    for p in sorted(src.iterdir()):
        fs.add(dcmread(p))
    cd = tmp_path / "cd"
    fs.write(cd)
    assert (cd / "DICOMDIR").is_file()
    case = read_image(cd)
    np.testing.assert_array_equal(case.image, vol)
    assert case.meta["dicomdir"] is True and case.meta["n_series"] == 2
    assert read_image(cd / "DICOMDIR", series="1.2.3.99").modality == "MR"
    assert sorted(s.n_images for s in list_series(cd)) == [1, 3]


def test_bad_number_of_frames(tmp_path, make):
    path = make.pydicom_file(
        tmp_path / "n.dcm", np.zeros((2, 4, 5), np.uint8), modality="US", NumberOfFrames="-2"
    )
    with pytest.raises(ReadError, match="NumberOfFrames '-2' is not a positive count"):
        read_image(path)
    folder = make.pydicom_series(tmp_path / "ct", np.zeros((3, 4, 5), np.int16))
    path.rename(folder / "n.dcm")
    with pytest.raises(
        ReadError,
        match=r"ct: 1 of 4 DICOM files cannot be read .*n.dcm: "
        r"NumberOfFrames '-2'",
    ):
        read_image(folder)
    assert [s.n_images for s in list_series(folder)] == [3]


def test_series_without_positions_ordered_with_warning(tmp_path, make, rng):
    folder = tmp_path / "sc"
    folder.mkdir()
    vol = rng.integers(0, 900, (3, 4, 5)).astype(np.int16)
    for k in (2, 0, 1):
        make.pydicom_file(folder / f"f{k}.dcm", vol[k], iop=None, ipp=None, instance=k + 1)
    case = read_image(folder)
    np.testing.assert_array_equal(case.image, vol)
    assert case.spacing == (2.5, 0.7, 0.6)
    assert (
        "no slice positions in the header: slices ordered by InstanceNumber, 2.5 mm apart"
        in case.meta["warnings"][0]
    )
