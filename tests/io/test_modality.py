import json

import numpy as np
import pytest

from napari_segeval.io import read_image
from napari_segeval.io._dataset_json import from_dicom, guess_modality


@pytest.mark.parametrize(
    "image, axes, expected",
    [
        (np.full((2, 2, 2), -1024, np.int16), "zyx", "CT"),
        (np.full((2, 2, 2), -1024.5, np.float32), "zyx", "other"),  # not whole numbers
        (np.full((2, 2, 2), -400, np.int16), "zyx", "other"),
        (np.zeros((2, 2, 3), np.uint8), "yxc", "endoscopy"),
        (np.zeros((2, 2, 2), np.uint8), "tyx", "US"),
        (np.zeros((2, 2), np.uint8), "yx", "other"),
    ],
)
def test_heuristics(image, axes, expected):
    assert guess_modality(image, axes) == expected


def test_dicom_codes():
    assert [from_dicom(t) for t in ("CT", "MR", "US", "PT", "ES", "OT")] == [
        "CT",
        "MR",
        "US",
        "PET",
        "endoscopy",
        "other",
    ]


def test_precedence_override_then_dataset_then_heuristic(tmp_path, make):
    path = make.nifti(tmp_path / "x.nii", np.full((3, 3, 3), -1000, np.int16), np.eye(4))
    assert read_image(path).modality == "CT"
    (tmp_path / "dataset.json").write_text(json.dumps({"modality": {"0": "MRI"}}))
    assert read_image(path).modality == "MR"
    assert read_image(path, modality="PET").modality == "PET"
    with pytest.raises(ValueError, match="modality must be one of"):
        read_image(path, modality="xray")
