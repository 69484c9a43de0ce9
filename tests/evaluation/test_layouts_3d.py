"""LiTS, KiTS23, WORD, FeTA 2022 and TotalSegmentator on generated miniature folders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from napari_segeval._errors import GeometryMismatchError, ReadError
from napari_segeval.evaluation._layouts_3d import read_structure_folder
from napari_segeval.evaluation.layouts import LAYOUTS, detect_layout, load_layout
from napari_segeval.evaluation.protocols._common import load_case
from napari_segeval.io import Geometry, write_image, write_labels

G = Geometry.identity(3, (2.0, 1.0, 1.0))


def volume(root: Path, name: str, labels: np.ndarray | None = None, shape=(3, 6, 6)) -> None:
    p = root / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if labels is None:
        write_image(p, np.full(shape, -500, np.int16), G)
    else:
        write_labels(p, labels.astype(np.uint8), G)


def lab(value: int, shape=(3, 6, 6)) -> np.ndarray:
    a = np.zeros(shape, np.uint8)
    a[1, 2:4, 2:4] = value
    return a


def test_every_new_layout_is_listed():
    assert {"lits", "kits23", "word", "feta", "totalsegmentator"} <= set(LAYOUTS)


def test_lits_published_split_train_and_test(tmp_path):
    for i in range(3):
        volume(tmp_path, f"Training Batch {1 + i // 2}/volume-{i}.nii", None)
        volume(tmp_path, f"Training Batch {1 + i // 2}/segmentation-{i}.nii", lab(2))
    volume(tmp_path, "Test/test-volume-0.nii.gz")
    volume(tmp_path, "Test/test-volume-1.nii.gz")
    volume(tmp_path, "Training Batch 2/volume-9.nii")  # no segmentation: an error row
    assert detect_layout(tmp_path) == "lits"
    specs = {s.case_id: s for s in load_layout(tmp_path)}
    train = sorted(c for c, s in specs.items() if s.split == "train")
    test = sorted(c for c, s in specs.items() if s.split == "test")
    assert train == ["volume-0", "volume-1", "volume-2", "volume-9"]
    assert test == ["test-volume-0", "test-volume-1"] and specs["test-volume-0"].labels is None
    assert "no segmentation-9" in specs["volume-9"].error
    case = load_case(specs["volume-1"])
    assert case.structures == {1: "liver", 2: "tumor"} and int(case.labels.max()) == 2
    assert case.modality == "CT"


def test_kits23_cases_in_the_dataset_subfolder(tmp_path):
    for i in (0, 3):
        volume(tmp_path, f"dataset/case_{i:05d}/imaging.nii.gz")
        volume(tmp_path, f"dataset/case_{i:05d}/segmentation.nii.gz", lab(3))
    assert detect_layout(tmp_path) == "kits23"
    specs = load_layout(tmp_path)
    assert [s.case_id for s in specs] == ["case_00000", "case_00003"]
    assert {s.split for s in specs} == {"train"}
    case = load_case(specs[1])
    assert case.structures[3] == "cyst" and int(case.labels.max()) == 3


def test_word_official_train_val_test(tmp_path):
    for split, tag, n in (("train", "Tr", 2), ("val", "Val", 1), ("test", "Ts", 1)):
        for i in range(n):
            name = f"word_{split}{i}.nii.gz"
            volume(tmp_path, f"images{tag}/{name}")
            volume(tmp_path, f"labels{tag}/{name}", lab(16))
    assert detect_layout(tmp_path) == "word"
    specs = load_layout(tmp_path)
    assert sorted((s.split, s.case_id) for s in specs) == [
        ("test", "word_test0"),
        ("train", "word_train0"),
        ("train", "word_train1"),
        ("val", "word_val0"),
    ]
    case = load_case(next(s for s in specs if s.split == "val"))
    assert len(case.structures) == 16 and case.structures[16] == "Head_of_femur_R"


def test_feta_bids_folders_with_two_reconstructions(tmp_path):
    volume(tmp_path, "sub-001/anat/sub-001_rec-mial_T2w.nii.gz")
    volume(tmp_path, "sub-001/anat/sub-001_rec-mial_dseg.nii.gz", lab(7))
    volume(tmp_path, "sub-002/anat/sub-002_rec-irtk_T2w.nii.gz")
    volume(tmp_path, "sub-002/anat/sub-002_rec-irtk_dseg.nii.gz", lab(4))
    (tmp_path / "participants.tsv").write_text("participant_id\tPathology\n")
    assert detect_layout(tmp_path) == "feta"
    specs = load_layout(tmp_path)
    assert [(s.case_id, s.meta["rec"]) for s in specs] == [("sub-001", "mial"), ("sub-002", "irtk")]
    case = load_case(specs[0])
    assert case.structures[7] == "brainstem" and case.modality == "MR"


def totalseg(root: Path, with_meta: bool = True) -> Path:
    names = {
        "s0001": ("liver", "aorta", "spleen"),
        "s0002": ("liver", "aorta"),
        "s0003": ("liver", "kidney_left"),
    }
    for i, (case, structs) in enumerate(names.items()):
        volume(root, f"{case}/ct.nii.gz")
        for j, name in enumerate(structs):
            m = np.zeros((3, 6, 6), np.uint8)
            m[j, i : i + 2, 1:3] = 1
            volume(root, f"{case}/segmentations/{name}.nii.gz", m)
    if with_meta:
        (root / "meta.csv").write_text(
            "image_id;age;gender;split\ns0001;50;m;train\ns0002;61;f;val\ns0003;70;f;test\n"
        )
    return root


def test_totalsegmentator_meta_split_and_merged_label_map(tmp_path):
    root = totalseg(tmp_path)
    assert detect_layout(root) == "totalsegmentator"
    specs = {s.case_id: s for s in load_layout(root)}
    assert {c: s.split for c, s in specs.items()} == {
        "s0001": "train",
        "s0002": "val",
        "s0003": "test",
    }
    ids = {1: "aorta", 2: "kidney_left", 3: "liver", 4: "spleen"}  # alphabetical over the set
    assert all(s.structures == ids for s in specs.values())
    case = load_case(specs["s0001"])
    assert case.structures == ids
    assert int(case.labels[0, 0, 1]) == 3  # liver (file 0) on slice 0
    assert int(case.labels[1, 0, 1]) == 1  # aorta on slice 1
    assert int(case.labels[2, 0, 1]) == 4  # spleen on slice 2
    assert sorted(np.unique(load_case(specs["s0003"]).labels).tolist()) == [0, 2, 3]


def test_totalsegmentator_ids_from_a_dataset_json_and_no_meta(tmp_path):
    root = totalseg(tmp_path, with_meta=False)
    (root / "dataset.json").write_text(
        json.dumps(
            {"labels": {"background": 0, "spleen": 1, "liver": 5, "aorta": 7, "kidney_left": 2}}
        )
    )
    specs = load_layout(root, "totalsegmentator")
    assert {s.split for s in specs} == {"train"}
    assert specs[0].structures == {1: "spleen", 2: "kidney_left", 5: "liver", 7: "aorta"}
    assert int(load_case(specs[0]).labels[0, 0, 1]) == 5


def test_totalsegmentator_dataset_json_regions_skipped_and_unreadable_named(tmp_path):
    root = totalseg(tmp_path, with_meta=False)
    labels = {"background": 0, "liver": 5, "abdomen": [5, 7]}  # a region entry: no single id
    (root / "dataset.json").write_text(json.dumps({"labels": labels}))
    assert load_layout(root, "totalsegmentator")[0].structures == {5: "liver"}
    (root / "dataset.json").write_text("{not json")
    with pytest.raises(ReadError, match="dataset.json: cannot read dataset.json"):
        load_layout(root, "totalsegmentator")


def test_structure_folder_errors(tmp_path):
    volume(tmp_path, "seg/a.nii.gz", lab(1))
    volume(tmp_path, "seg/b.nii.gz", lab(1, (3, 7, 6)))
    with pytest.raises(GeometryMismatchError):
        read_structure_folder(tmp_path / "seg", {1: "a", 2: "b"})
    with pytest.raises(ReadError, match="no such segmentations folder"):
        read_structure_folder(tmp_path / "nope", {1: "a"})
    with pytest.raises(Exception, match="none of the 1 structure files"):
        read_structure_folder(tmp_path / "seg", {1: "zzz"})
    labels, _ = read_structure_folder(tmp_path / "seg", {1: "a"})
    assert labels.dtype == np.uint8 and int(labels.sum()) == 4
