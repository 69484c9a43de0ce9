from __future__ import annotations

import gzip

import numpy as np
import pytest

from napari_segeval.io._nifti import affine_from_geometry
from napari_segeval.io.case import Geometry
from napari_segeval.phantoms._encode import (
    decode_mp4_grey,
    metaimage_files,
    mp4_bytes,
    nifti_gz_bytes,
    png_bytes,
)


def _geometry() -> Geometry:
    return Geometry((3.0, 1.5, 0.5), (-10.0, 4.0, 7.0), tuple(np.eye(3).ravel()))


def test_nifti_round_trip_through_simpleitk(tmp_path):
    import SimpleITK as sitk

    arr = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4)
    path = tmp_path / "a.nii.gz"
    path.write_bytes(nifti_gz_bytes(arr, _geometry()))
    img = sitk.ReadImage(str(path))
    assert np.array_equal(sitk.GetArrayFromImage(img), arr)
    np.testing.assert_allclose(img.GetSpacing(), (0.5, 1.5, 3.0))
    np.testing.assert_allclose(img.GetOrigin(), (-10.0, 4.0, 7.0))
    np.testing.assert_allclose(img.GetDirection(), np.eye(3).ravel(), atol=1e-6)


def test_nifti_header_codes_and_deterministic_gzip():
    import nibabel as nib

    data = nifti_gz_bytes(np.ones((2, 3, 4), np.uint8), _geometry(), "hello")
    assert data == nifti_gz_bytes(np.ones((2, 3, 4), np.uint8), _geometry(), "hello")
    assert data[4:8] == b"\0\0\0\0"  # gzip mtime 0
    img = nib.Nifti1Image.from_bytes(gzip.decompress(data))
    assert int(img.header["qform_code"]) == 1 and int(img.header["sform_code"]) == 1
    assert img.header.get_xyzt_units()[0] == "mm"
    np.testing.assert_allclose(img.affine, affine_from_geometry(_geometry()))
    assert img.shape == (4, 3, 2)


def test_png_and_metaimage_are_deterministic():
    rgb = np.random.default_rng(0).integers(0, 255, (8, 9, 3), dtype=np.uint8)
    assert png_bytes(rgb) == png_bytes(rgb)
    seq = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    files = metaimage_files(seq, (1.0, 1.4, 1.4), "s")
    assert files == metaimage_files(seq, (1.0, 1.4, 1.4), "s")
    assert files["s.raw"] == seq.tobytes()
    assert b"ElementDataFile = s.raw" in files["s.mhd"]


def test_mp4_deterministic_and_close_to_source():
    pytest.importorskip("av")
    _, xx = np.mgrid[0:32, 0:48]
    frames = np.stack([((xx + 3 * t) * 4 % 256).astype(np.uint8) for t in range(5)])
    a, b = mp4_bytes(frames, 25), mp4_bytes(frames, 25)
    assert a == b
    decoded = decode_mp4_grey(a)
    assert decoded.shape == frames.shape
    assert np.abs(decoded.astype(int) - frames).mean() < 8
