"""Filtered nnU-Net splits and dataset.json files."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval.uncertainty.training_lists import (
    case_id_of,
    crossval_splits,
    filter_dataset_json,
    filter_splits,
)


def test_case_ids_of_dataset_json_paths():
    assert case_id_of("./imagesTr/liver_10.nii.gz") == "liver_10"
    assert case_id_of("imagesTr/BRATS_001_0003.nii.gz") == "BRATS_001"
    assert case_id_of("a\\b\\case.mha") == "case"


def test_crossval_splits_follow_the_shuffled_kfold_recipe():
    ids = [f"case_{i:02d}" for i in range(13)]
    folds = crossval_splits(reversed(ids))  # order of the input does not matter
    order = np.arange(13)
    np.random.RandomState(12345).shuffle(order)
    sizes = [3, 3, 3, 2, 2]
    start = 0
    for fold, size in zip(folds, sizes):
        val = sorted(ids[i] for i in order[start : start + size])
        start += size
        assert fold["val"] == val
        assert fold["train"] == [c for c in ids if c not in val]
    assert sorted(c for f in folds for c in f["val"]) == ids
    assert crossval_splits(ids) == folds
    with pytest.raises(ValueError, match="cannot fill"):
        crossval_splits(["a", "b"])


def test_filter_splits_touches_train_lists_only():
    splits = [{"train": ["a", "b", "c"], "val": ["d"]}, {"train": ["a", "d"], "val": ["b", "c"]}]
    out = filter_splits(splits, {"b", "x"})
    assert out == [{"train": ["a", "c"], "val": ["d"]}, {"train": ["a", "d"], "val": ["b", "c"]}]
    assert splits[0]["train"] == ["a", "b", "c"]  # input unchanged


def test_filter_dataset_json_msd_and_nnunet_forms():
    msd = {
        "numTraining": 3,
        "test": ["./imagesTs/t.nii.gz"],
        "training": [
            {"image": f"./imagesTr/c{i}.nii.gz", "label": f"./labelsTr/c{i}.nii.gz"}
            for i in range(3)
        ],
    }
    out, dropped = filter_dataset_json(msd, ["c1", "t"])
    assert [e["image"] for e in out["training"]] == ["./imagesTr/c0.nii.gz", "./imagesTr/c2.nii.gz"]
    assert out["numTraining"] == 2 and dropped == ["c1"] and out["test"] == msd["test"]
    nn = {
        "numTraining": 2,
        "dataset": {"p1": {"images": ["a"], "label": "b"}, "p2": {"images": ["c"], "label": "d"}},
    }
    out, dropped = filter_dataset_json(nn, ["p2"])
    assert list(out["dataset"]) == ["p1"] and out["numTraining"] == 1 and dropped == ["p2"]
    scanned = {"numTraining": 2, "channel_names": {"0": "CT"}, "file_ending": ".nii.gz"}
    assert filter_dataset_json(scanned, ["p2"]) == (scanned, [])
