"""gzip inflation with ISA-L when installed, the standard module otherwise: same bytes, same errors."""

from __future__ import annotations

import gzip

import nibabel as nib
import numpy as np
import pytest

from napari_segeval._errors import ReadError
from napari_segeval.io import _gzip, read_image


@pytest.fixture(params=["installed", "zlib"])
def inflater(request, monkeypatch):
    """Run a test with the accelerator as installed, and with the standard gzip module."""
    if request.param == "zlib":
        monkeypatch.setattr(_gzip, "_igzip", None)
    return _gzip.backend()


def _nifti(path, data):
    nib.save(nib.Nifti1Image(data, np.diag([0.8, 0.7, 2.5, 1.0])), path)
    return path


def test_same_bytes_and_arrays_either_way(tmp_path, inflater):
    data = np.random.default_rng(0).normal(size=(17, 13, 9)).astype(np.float32)
    payload = gzip.compress(data.tobytes()) + gzip.compress(b"second member")
    assert _gzip.gunzip(payload) == data.tobytes() + b"second member"
    case = read_image(_nifti(tmp_path / "f.nii.gz", data))
    np.testing.assert_array_equal(case.image, data.T)
    assert case.image.flags.writeable
    np.testing.assert_allclose(case.spacing, (2.5, 0.7, 0.8), rtol=1e-6)


def test_scaled_and_big_endian_voxels_as_nibabel_reads_them(tmp_path, inflater):
    raw = np.arange(60, dtype=">i2").reshape(5, 4, 3)
    img = nib.Nifti1Image(raw, np.eye(4))
    img.header.set_slope_inter(0.5, -3.0)
    nib.save(img, tmp_path / "s.nii.gz")
    want = np.asanyarray(nib.load(tmp_path / "s.nii.gz").dataobj)
    np.testing.assert_array_equal(read_image(tmp_path / "s.nii.gz").image, want.T)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda b: b[:-2], "c.nii.gz: cannot read NIfTI"),  # no length trailer
        (lambda b: b[: len(b) // 2], "c.nii.gz: cannot read NIfTI"),  # cut in the middle
        (lambda b: b[:-8] + bytes([b[-8] ^ 1]) + b[-7:], "CRC check failed"),  # voxels changed
        (lambda b: b"NIfTI?" + b[6:], "Not a gzipped file"),
    ],
)
def test_damaged_files_are_refused_with_the_same_message(tmp_path, inflater, damage, message):
    data = np.random.default_rng(1).integers(-1000, 1000, (16, 16, 8)).astype(np.int16)
    path = _nifti(tmp_path / "c.nii.gz", data)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ReadError, match=message):
        read_image(path)
