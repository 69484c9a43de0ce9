"""Colour DICOM: multi-frame RGB, PALETTE COLOR, uncompressed YBR_FULL_422 (files by pydicom)."""

from __future__ import annotations

import numpy as np
import pytest
import SimpleITK as sitk
from pydicom import dcmread
from pydicom.pixels import apply_color_lut

from napari_segeval._errors import InvalidLabelsError, ReadError
from napari_segeval.io import list_series, read_image, read_labels

SC = {"modality": "OT", "iop": None, "ipp": None, "spacing": None, "thickness": None}


def _rgb(rng, shape):
    return rng.integers(0, 256, (*shape, 3)).astype(np.uint8)


def _sitk(path):
    return sitk.GetArrayFromImage(sitk.ReadImage(str(path)))


def _one_line(path, match):
    with pytest.raises(ReadError, match=match) as info:
        read_image(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


# --- RGB stacks -------------------------------------------------------------------------


@pytest.mark.parametrize("planar", [0, 1])
def test_multiframe_rgb_secondary_capture_is_a_stack_of_rgb_frames(tmp_path, make, rng, planar):
    frames = _rgb(rng, (2, 6, 8))
    path = make.pydicom_file(tmp_path / "sc.dcm", frames, SamplesPerPixel=3, **SC)
    if planar:  # the same pixels stored colour plane by colour plane
        ds = dcmread(path)
        ds.PlanarConfiguration = 1
        ds.PixelData = np.ascontiguousarray(frames.transpose(0, 3, 1, 2)).tobytes()
        ds.save_as(path)
    case = read_image(path)
    assert case.axes == "tyxc" and case.image.dtype == np.uint8
    np.testing.assert_array_equal(case.image, frames)
    np.testing.assert_array_equal(case.image, _sitk(path))  # GDCM agrees
    assert case.meta["has_geometry"] is False and case.meta["pixels"].startswith("RGB,")


def test_rgb_loop_keeps_the_geometry_of_a_grey_loop(tmp_path, make, rng):
    frames = _rgb(rng, (3, 5, 6))
    kw = {
        "modality": "US",
        "iop": (0, 1, 0, 0, 0, -1),
        "ipp": (5.0, 6.0, 7.0),
        "spacing": (0.3, 0.2),
    }
    case = read_image(make.pydicom_file(tmp_path / "us.dcm", frames, SamplesPerPixel=3, **kw))
    grey = read_image(make.pydicom_file(tmp_path / "grey.dcm", frames[..., 0], **kw))
    assert case.axes == "tyxc" and case.image.shape == (3, 5, 6, 3) and grey.axes == "tyx"
    assert case.spacing == (1.0, 0.3, 0.2) and case.geometry == grey.geometry
    assert case.meta["has_geometry"] is True


def test_positioned_rgb_slices_keep_their_spacing(tmp_path, make, rng):
    vol = _rgb(rng, (3, 4, 5))
    folder = tmp_path / "render"
    folder.mkdir()
    for k in (2, 0, 1):
        make.pydicom_file(
            folder / f"s{k}.dcm",
            vol[k],
            SamplesPerPixel=3,
            modality="OT",
            ipp=(0.0, 0.0, 4.0 * k),
            instance=k + 1,
        )
    case = read_image(folder)
    assert case.axes == "tyxc" and case.spacing == (4.0, 0.7, 0.6)
    np.testing.assert_array_equal(case.image, vol)


def test_unpositioned_rgb_captures_of_a_series_are_frames_in_instance_order(tmp_path, make, rng):
    shots = _rgb(rng, (3, 4, 6))
    folder = tmp_path / "captures"
    folder.mkdir()
    for k in (1, 2, 0):
        make.pydicom_file(folder / f"c{k}.dcm", shots[k], SamplesPerPixel=3, instance=k + 1, **SC)
    case = read_image(folder)
    assert case.axes == "tyxc"
    np.testing.assert_array_equal(case.image, shots)
    assert "shown as frames ordered by InstanceNumber" in case.meta["warnings"][-1]


def test_grey_and_colour_images_of_one_series_never_stack(tmp_path, make, rng):
    folder = tmp_path / "mixed"
    folder.mkdir()
    make.pydicom_file(
        folder / "grey.dcm", rng.integers(0, 255, (4, 6)).astype(np.uint8), instance=1, **SC
    )
    make.pydicom_file(
        folder / "pal.dcm",
        rng.integers(0, 4, (4, 6)).astype(np.uint8),
        instance=2,
        **SC,
        **make.palette_tags([0, 9, 99, 255], [1, 2, 3, 4], [5, 6, 7, 8], bits=8),
    )
    series = list_series(folder)
    assert len(series) == 2 and "different colour" in series[0].split
    assert {read_image(folder, series=s.id).axes for s in series} == {"yx", "yxc"}


def test_dicomdir_with_a_colour_loop(tmp_path, make, rng):
    from pydicom.fileset import FileSet

    frames = _rgb(rng, (2, 4, 6))
    ids = {
        "PatientID": "P1",
        "PatientName": "Doe^J",
        "StudyDate": "20240101",
        "StudyTime": "120000",
        "StudyID": "1",
        "AccessionNumber": "1",
    }
    src = make.pydicom_file(tmp_path / "loop.dcm", frames, SamplesPerPixel=3, **SC, **ids)
    fs = FileSet()
    fs.add(dcmread(src))
    fs.write(tmp_path / "cd")
    case = read_image(tmp_path / "cd")
    assert case.axes == "tyxc" and case.meta["dicomdir"] is True
    np.testing.assert_array_equal(case.image, frames)


def test_truncated_rgb_frames_are_one_line(tmp_path, make, rng):
    path = make.pydicom_file(tmp_path / "cut.dcm", _rgb(rng, (2, 6, 8)), SamplesPerPixel=3, **SC)
    ds = dcmread(path)
    ds.PixelData = ds.PixelData[:200]
    ds.save_as(path)
    _one_line(
        path,
        r"header and pixel data disagree: the header says 6 x 8 pixels x 2 frames "
        r"of 8 bits \(288 bytes\) but the pixel data hold 200 bytes",
    )


# --- PALETTE COLOR ----------------------------------------------------------------------


def _palette(bits):
    i = np.arange(256)
    lut = (i, 255 - i, (i * 7) % 256)
    return [v * 257 for v in lut] if bits == 16 else list(lut)


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("shape", [(6, 8), (3, 6, 8)], ids=["one image", "multi-frame"])
def test_palette_colour_opens_as_rgb_through_its_palette(tmp_path, make, rng, bits, shape):
    idx = rng.integers(0, 256, shape).astype(np.uint8)
    path = make.pydicom_file(
        tmp_path / "pal.dcm",
        idx,
        modality="US",
        iop=None,
        ipp=None,
        spacing=None,
        **make.palette_tags(*_palette(bits), bits=bits),
    )
    case = read_image(path)
    ds = dcmread(path)
    want = apply_color_lut(ds.pixel_array, ds)  # pydicom's colour LUT is the oracle
    want = (want >> 8).astype(np.uint8) if bits == 16 else want
    assert case.axes == ("yxc" if len(shape) == 2 else "tyxc") and case.image.dtype == np.uint8
    np.testing.assert_array_equal(case.image, want)
    np.testing.assert_array_equal(case.image, _sitk(path).reshape(want.shape))  # and GDCM's
    assert "PALETTE COLOR shown as RGB through its palette" in case.meta["pixels"]


def test_sixteen_bit_palette_entries_holding_eight_bit_values_are_kept(tmp_path, make, rng):
    idx = rng.integers(0, 256, (4, 5)).astype(np.uint8)
    path = make.pydicom_file(
        tmp_path / "pal.dcm", idx, **SC, **make.palette_tags(*_palette(8), bits=16)
    )
    ds = dcmread(path)
    np.testing.assert_array_equal(read_image(path).image, apply_color_lut(ds.pixel_array, ds))


def test_palette_indices_compressed_by_gdcm(tmp_path, make, rng):
    """Pixels pydicom cannot decode (JPEG lossless) go to GDCM, which applies the palette."""
    idx = rng.integers(0, 256, (6, 8)).astype(np.uint8)
    ds = dcmread(make.gdcm_jpeg_lossless(tmp_path / "pal.dcm", idx))
    for key, value in make.palette_tags(*_palette(16), bits=16).items():
        setattr(ds, key, value)
        if key.endswith("Descriptor"):
            ds[key].VR = "US"
    ds.save_as(tmp_path / "pal.dcm")
    case = read_image(tmp_path / "pal.dcm")
    assert case.axes == "yxc" and "decoded by GDCM" in case.meta["pixels"]
    lut = np.stack(_palette(16), axis=-1) >> 8
    np.testing.assert_array_equal(case.image, lut[idx])


@pytest.mark.parametrize(
    "damage, match",
    [
        ("no data", "PALETTE COLOR image has no usable palette"),
        ("cut data", "PALETTE COLOR image has no usable palette"),
        ("cut pixels", "header and pixel data disagree"),
    ],
)
def test_broken_palette_image_is_one_line(tmp_path, make, rng, damage, match):
    path = make.pydicom_file(
        tmp_path / "pal.dcm",
        rng.integers(0, 256, (2, 6, 8)).astype(np.uint8),
        **SC,
        **make.palette_tags(*_palette(16), bits=16),
    )
    ds = dcmread(path)
    if damage == "no data":
        del ds.RedPaletteColorLookupTableData
    elif damage == "cut data":
        ds.GreenPaletteColorLookupTableData = ds.GreenPaletteColorLookupTableData[:300]
    else:
        ds.PixelData = ds.PixelData[:-10]
    ds.save_as(path)
    _one_line(path, match)


def test_palette_image_given_as_labels_needs_a_colour_table(tmp_path, make, rng):
    path = make.pydicom_file(
        tmp_path / "pal.dcm",
        rng.integers(0, 256, (4, 6)).astype(np.uint8),
        **SC,
        **make.palette_tags(*_palette(8), bits=8),
    )
    with pytest.raises(InvalidLabelsError, match="colour-coded mask needs a colour table"):
        read_labels(path)


# --- YBR_FULL_422 -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(6, 4), (2, 6, 4)], ids=["one image", "multi-frame"])
def test_uncompressed_ybr_full_422_is_rgb(tmp_path, make, rng, shape):
    rgb = _rgb(rng, shape).repeat(2, axis=-2)  # pixel pairs share their chroma
    path = make.pydicom_file(
        tmp_path / "ybr.dcm", rgb, SamplesPerPixel=3, **SC, PhotometricInterpretation="YBR_FULL_422"
    )
    ds = dcmread(path)
    ds.PixelData = make.ybr_full_422(rgb)
    ds.save_as(path)
    case = read_image(path)
    assert case.axes == ("yxc" if len(shape) == 2 else "tyxc") and case.image.shape == rgb.shape
    assert np.abs(case.image.astype(int) - rgb).max() <= 1  # YCbCr rounding
    np.testing.assert_array_equal(case.image, _sitk(path).reshape(rgb.shape))
    assert case.meta["pixels"].startswith("YBR_FULL_422 shown as RGB")


def test_truncated_ybr_full_422_is_one_line(tmp_path, make, rng):
    rgb = _rgb(rng, (6, 8))
    path = make.pydicom_file(
        tmp_path / "ybr.dcm", rgb, SamplesPerPixel=3, **SC, PhotometricInterpretation="YBR_FULL_422"
    )
    ds = dcmread(path)
    ds.PixelData = make.ybr_full_422(rgb)[:-20]
    ds.save_as(path)
    _one_line(
        path,
        r"header says 6 x 8 pixels x 1 frame of 8 bits \(96 bytes\) but the pixel "
        r"data hold 76 bytes",
    )
