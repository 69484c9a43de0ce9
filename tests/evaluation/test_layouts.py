"""Layout parsers on generated folders (names only; files may be empty)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.layouts import CaseSpec, detect_layout, inside, load_layout

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"


def touch(root: Path, *names: str) -> None:
    for n in names:
        p = root / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")


def test_msd_entries_channels_test_split_and_escape(tmp_path):
    touch(
        tmp_path,
        "imagesTr/a.nii.gz",
        "labelsTr/a.nii.gz",
        "imagesTr/b_0000.nii.gz",
        "imagesTr/b_0001.nii.gz",
        "labelsTr/b.nii.gz",
        "imagesTs/c.nii.gz",
    )
    ds = {
        "labels": {"0": "background", "1": "tumour"},
        "modality": {"0": "FLAIR", "1": "T1"},
        "training": [
            {"image": "./imagesTr/a.nii.gz", "label": "./labelsTr/a.nii.gz"},
            {"image": "./imagesTr/b.nii.gz", "label": "./labelsTr/b.nii.gz"},
            {"image": "../../etc/passwd", "label": "./labelsTr/a.nii.gz"},
        ],
        "test": ["./imagesTs/c.nii.gz"],
    }
    (tmp_path / "dataset.json").write_text(json.dumps(ds))
    specs = {s.case_id: s for s in load_layout(tmp_path)}
    assert specs["a"].layout == "msd" and specs["a"].structures == {1: "tumour"}
    assert specs["a"].modality == "MR" and specs["a"].error is None
    assert [Path(p).name for p in specs["b"].images] == ["b_0000.nii.gz", "b_0001.nii.gz"]
    assert specs["c"].split == "test" and specs["c"].labels is None
    assert "escapes the data-set folder" in specs["passwd"].error


def test_msd_without_entries_scans_folders(tmp_path):
    touch(tmp_path, "imagesTr/x_0000.nii.gz", "labelsTr/x.nii.gz", "imagesTs/y_0000.nii.gz")
    (tmp_path / "dataset.json").write_text(json.dumps({"labels": {"0": "bg", "1": "liver"}}))
    specs = load_layout(tmp_path, "msd")
    assert [(s.case_id, s.split, bool(s.labels)) for s in specs] == [
        ("x", "train", True),
        ("y", "test", False),
    ]


def test_nnunet_channels_splits_and_channel_mismatch(tmp_path):
    touch(
        tmp_path,
        "imagesTr/p1_0000.nii.gz",
        "imagesTr/p1_0001.nii.gz",
        "labelsTr/p1.nii.gz",
        "imagesTr/p2_0000.nii.gz",
        "imagesTr/p2_0001.nii.gz",
        "labelsTr/p2.nii.gz",
        "imagesTr/p3_0000.nii.gz",
        "labelsTr/p3.nii.gz",
        "imagesTr/p1_0000.png",
    )
    ds = {
        "channel_names": {"0": "T2", "1": "ADC"},
        "labels": {"background": 0, "prostate": 1},
        "numTraining": 3,
        "file_ending": ".nii.gz",
    }
    (tmp_path / "dataset.json").write_text(json.dumps(ds))
    (tmp_path / "splits_final.json").write_text(
        json.dumps([{"train": ["p2"], "val": ["p1"]}, {"train": ["p1"], "val": ["p2"]}])
    )
    assert detect_layout(tmp_path) == "nnunet"
    specs = {s.case_id: s for s in load_layout(tmp_path)}
    assert sorted(specs) == ["p1", "p2", "p3"]
    assert len(specs["p1"].images) == 2 and specs["p1"].structures == {1: "prostate"}
    assert specs["p1"].meta["channel_names"] == ["T2", "ADC"]
    assert (specs["p1"].fold, specs["p2"].fold, specs["p3"].fold) == (0, 1, None)
    assert "1 channel files" in specs["p3"].error


def test_nnunet_explicit_dataset_entries_refuse_escape(tmp_path):
    ds = {
        "channel_names": {"0": "CT"},
        "labels": {"background": 0, "liver": 1},
        "file_ending": ".nii.gz",
        "dataset": {
            "ok": {"images": ["imgs/ok.nii.gz"], "label": "segs/ok.nii.gz"},
            "evil": {"images": ["/etc/shadow"], "label": "segs/ok.nii.gz"},
        },
    }
    (tmp_path / "dataset.json").write_text(json.dumps(ds))
    specs = {s.case_id: s for s in load_layout(tmp_path)}
    assert specs["ok"].error is None and specs["ok"].images[0].endswith("imgs/ok.nii.gz")
    assert "escapes" in specs["evil"].error


def test_camus_frames_sequences_and_published_split(tmp_path):
    for pid in ("patient0001", "patient0002"):
        for view in ("2CH", "4CH"):
            for part in ("ED", "ES", "half_sequence"):
                touch(
                    tmp_path,
                    f"{pid}/{pid}_{view}_{part}.nii.gz",
                    f"{pid}/{pid}_{view}_{part}_gt.nii.gz",
                )
    touch(tmp_path, "database_split/subgroup_testing.txt")
    (tmp_path / "database_split/subgroup_testing.txt").write_text("patient0002\n")
    assert detect_layout(tmp_path) == "camus"
    frames = load_layout(tmp_path)
    assert len(frames) == 8 and {s.meta["phase"] for s in frames} == {"ED", "ES"}
    assert {s.split for s in frames if s.meta["patient"] == "patient0002"} == {"test"}
    seqs = load_layout(tmp_path, camus_mode="sequences")
    assert [s.case_id for s in seqs][:2] == [
        "patient0001_2CH_half_sequence",
        "patient0001_4CH_half_sequence",
    ]
    assert seqs[0].structures[3] == "left_atrium" and seqs[0].modality == "US"
    every = load_layout(tmp_path, camus_mode="all")
    assert len(every) == 12
    assert {s.case_id: s.group for s in every}["patient0002_4CH_half_sequence"] == "patient0002"
    assert {s.group for s in every} == {"patient0001", "patient0002"}
    for mode in ("", "ed"):
        with pytest.raises(SegEvalError, match="CAMUS mode must be frames, sequences or all"):
            load_layout(tmp_path, camus_mode=mode)


def test_isic_official_folders(tmp_path):
    touch(
        tmp_path,
        "ISIC2018_Task1-2_Training_Input/ISIC_0000001.jpg",
        "ISIC2018_Task1_Training_GroundTruth/ISIC_0000001_segmentation.png",
        "ISIC2018_Task1-2_Validation_Input/ISIC_0000009.jpg",
        "ISIC2018_Task1_Validation_GroundTruth/ISIC_0000009_segmentation.png",
        "ISIC2018_Task1-2_Test_Input/ISIC_0000020.jpg",
    )
    assert detect_layout(tmp_path) == "isic"
    specs = {s.case_id: s for s in load_layout(tmp_path)}
    assert specs["ISIC_0000001"].labels.endswith("ISIC_0000001_segmentation.png")
    assert [specs[c].split for c in ("ISIC_0000001", "ISIC_0000009", "ISIC_0000020")] == [
        "train",
        "val",
        "test",
    ]
    assert specs["ISIC_0000020"].labels is None
    assert all(s.group is None for s in specs.values())  # image ids only: own group


def test_isic_superpixels_are_not_cases_and_metadata_groups(tmp_path):
    touch(
        tmp_path,
        "In/ISIC_0000001.jpg",
        "In/ISIC_0000001_superpixels.png",
        "In/ISIC_0000002.jpg",
        "In/ISIC_0000003.jpg",
        "In/ISIC_0000004.jpg",
        "GT/ISIC_0000001_segmentation.png",
    )
    (tmp_path / "metadata.csv").write_text(
        "isic_id,attribution,lesion_id,patient_id\n"
        "ISIC_0000001,x,IL_1,\nISIC_0000002,x,IL_1,IP_9\nISIC_0000003,x,,IP_9\n"
        "ISIC_0000004,x,,\n"
    )
    (tmp_path / "other.csv").write_text("name,value\nISIC_0000004,IL_1\n")  # ignored
    specs = {s.case_id: s for s in load_layout(tmp_path, "isic")}
    assert sorted(specs) == ["ISIC_0000001", "ISIC_0000002", "ISIC_0000003", "ISIC_0000004"]
    assert {specs[c].group for c in ("ISIC_0000001", "ISIC_0000002", "ISIC_0000003")} == {
        "lesion:IL_1"
    }
    assert specs["ISIC_0000004"].group is None and specs["ISIC_0000004"].group_id == "ISIC_0000004"


def test_neopolyp_kaggle_layout(tmp_path):
    touch(
        tmp_path,
        "train/train/a1.jpeg",
        "train_gt/train_gt/a1.jpeg",
        "train/train/a2.jpeg",
        "train_gt/train_gt/a2.jpeg",
        "test/test/t1.jpeg",
    )
    assert detect_layout(tmp_path) == "neopolyp"
    specs = {s.case_id: s for s in load_layout(tmp_path)}
    assert specs["a1"].labels.endswith("train_gt/train_gt/a1.jpeg")
    assert specs["a1"].reader_color_table() == {
        (255, 0, 0): (1, "neoplastic"),
        (0, 255, 0): (2, "non_neoplastic"),
    }
    assert specs["t1"].split == "test" and specs["t1"].labels is None
    assert specs["a1"].group is None  # BKAI-IGH publishes no patient ids


def test_generic_pairs_and_pattern_escape(tmp_path):
    touch(tmp_path, "scans/s1.mha", "scans/s2.mha", "masks/s1-seg.mha", "scans/notes.txt")
    specs = load_layout(tmp_path, "generic", images="scans/*.mha", labels="masks/{stem}-seg.*")
    assert [(s.case_id, s.labels is not None) for s in specs] == [("s1", True), ("s2", False)]
    same_folder = load_layout(tmp_path, "generic", images="masks/*", labels="masks/{stem}-seg.mha")
    assert [s.case_id for s in same_folder] == ["s1-seg"]  # its label does not exist
    with pytest.raises(SegEvalError, match="escapes"):
        load_layout(tmp_path, "generic", images="scans/*.mha", labels="../{stem}.mha")
    with pytest.raises(SegEvalError, match="no cases"):
        load_layout(tmp_path, "generic", images="nothing/*.mha")
    for pattern, what in [
        ("masks/{nosuch}.mha", "unknown field {nosuch}"),
        ("masks/{}.mha", "Replacement index 0 out of range for positional args tuple"),
        ("masks/{stem.mha", "expected '}' before end of string"),
    ]:
        with pytest.raises(SegEvalError) as err:
            load_layout(tmp_path, "generic", images="scans/*.mha", labels=pattern)
        assert str(err.value) == (
            f"label pattern {pattern!r}: {what} (fields: {{stem}}, {{name}}, {{parent}})"
        )


def test_a_dataset_json_that_is_not_an_object_is_one_line(tmp_path):
    touch(tmp_path, "imagesTr/a.nii.gz", "labelsTr/a.nii.gz")
    (tmp_path / "dataset.json").write_text("[]")
    with pytest.raises(SegEvalError) as err:
        load_layout(tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'dataset.json'}: dataset.json must hold a JSON object, not list"
    )


def test_detect_refuses_unknown_folder(tmp_path):
    touch(tmp_path, "x.nii.gz")
    with pytest.raises(SegEvalError, match="--layout generic"):
        detect_layout(tmp_path)


def test_inside_allows_nested_and_refuses_absolute(tmp_path):
    assert inside(tmp_path, "a/../b/c.nii.gz") == tmp_path / "b" / "c.nii.gz"
    with pytest.raises(SegEvalError):
        inside(tmp_path, str(tmp_path.parent / "x.nii.gz"))


def test_spec_roundtrip_json():
    s = CaseSpec(
        "c",
        ("i.png",),
        "m.png",
        structures={1: "a"},
        color_table={"1": [255, 0, 0]},
        fold=2,
        meta={"view": "2CH"},
    )
    assert CaseSpec.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_sample_data_layouts():
    assert len(load_layout(SAMPLE / "msd_task" / "Task90_AbdomenPhantom")) == 6
    assert [s.layout for s in load_layout(SAMPLE / "video")] == ["camus"]
    assert {s.layout for s in load_layout(SAMPLE / "polyp")} == {"neopolyp"}
    assert {s.layout for s in load_layout(SAMPLE / "skin")} == {"isic"}


def test_layouts_list_the_files_the_reader_reads():
    from napari_segeval.evaluation import _layouts_2d, layouts
    from napari_segeval.io import _formats

    assert layouts.IMAGE_SUFFIXES is _formats.IMAGE_SUFFIXES  # one list, in io
    assert _layouts_2d.IMAGE_SUFFIXES is _formats.IMAGE_SUFFIXES
    assert all(_formats.kind(f"case{ext}") is not None for ext in _formats.IMAGE_SUFFIXES)
    assert {".nhdr", ".mkv", ".mov", ".tif"} <= set(_formats.IMAGE_SUFFIXES)
