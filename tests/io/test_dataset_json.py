import json

import numpy as np
import pytest

from napari_segeval._errors import ReadError
from napari_segeval.io import load_dataset_json, read_case, read_labels, structure_names
from napari_segeval.io._dataset_json import dataset_modality, find_dataset_json


def test_both_label_forms():
    assert structure_names({"labels": {"0": "background", "1": "liver", "2": "cancer"}}) == {
        1: "liver",
        2: "cancer",
    }
    assert structure_names({"labels": {"background": 0, "liver": 1, "tumor": "2"}}) == {
        1: "liver",
        2: "tumor",
    }
    assert structure_names({}) == {}


def test_modalities():
    assert dataset_modality({"modality": {"0": "CT"}}) == "CT"
    assert dataset_modality({"modality": {"0": "T2", "1": "ADC"}}) == "MR"
    assert dataset_modality({"channel_names": {"0": "MRI"}}) == "MR"
    assert dataset_modality({"channel_names": {"0": "noNorm"}}) == "other"
    assert dataset_modality({}) is None


def test_broken_and_missing(tmp_path):
    (tmp_path / "dataset.json").write_text("{not json")
    with pytest.raises(ReadError, match="dataset.json"):
        load_dataset_json(tmp_path)
    with pytest.raises(ReadError, match="not found"):
        load_dataset_json(tmp_path / "nope" / "dataset.json")
    (tmp_path / "dataset.json").write_text("[1]")
    with pytest.raises(ReadError, match="JSON object"):
        load_dataset_json(tmp_path)


def test_labels_that_are_not_an_object_name_the_file(tmp_path):
    (tmp_path / "dataset.json").write_text('{"labels": ["background", "liver"]}')
    with pytest.raises(ReadError) as err:
        load_dataset_json(tmp_path)
    assert str(err.value) == f"{tmp_path / 'dataset.json'}: 'labels' must be an object, got list"


def test_msd_layout_found_above_labels(tmp_path, make):
    task = tmp_path / "Task03_Liver"
    (task / "imagesTr").mkdir(parents=True)
    (task / "labelsTr").mkdir()
    (task / "dataset.json").write_text(
        json.dumps(
            {"modality": {"0": "CT"}, "labels": {"0": "background", "1": "liver", "2": "cancer"}}
        )
    )
    img = make.nifti(task / "imagesTr" / "liver_0.nii.gz", np.zeros((4, 4, 3), np.int16), np.eye(4))
    seg = make.nifti(task / "labelsTr" / "liver_0.nii.gz", np.ones((4, 4, 3), np.uint8), np.eye(4))
    assert find_dataset_json(seg) == task / "dataset.json"
    assert read_labels(seg)[2] == {1: "liver", 2: "cancer"}
    case = read_case(img, seg)
    assert case.modality == "CT" and case.structure_name(2) == "cancer"
