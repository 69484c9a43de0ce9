"""Each protocol end to end on generated data with weight-free or toy models."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from _segeval_toy import TOY, write_msd

from napari_segeval.evaluation import get_protocol, run_evaluation
from napari_segeval.evaluation.protocols._promptable import reference_prompts
from napari_segeval.prompts.from_labels import key_index


def read_rows(path) -> list[dict]:
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["status"] == "ok"]


def bright_ct_task(root):
    """Two bright boxes in air-like CT (the threshold model finds them exactly)."""
    from napari_segeval.io import Geometry, write_image, write_labels

    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    g = Geometry.identity(3, (2.0, 1.0, 1.0))
    training = []
    for i in range(2):
        labels = np.zeros((10, 24, 24), np.uint8)
        labels[2:8, 3 + i : 11 + i, 4:12] = 1
        labels[3:6, 14:20, 14:21] = 2
        image = np.where(labels > 0, 200, -1000).astype(np.int16)
        write_image(root / "imagesTr" / f"b{i}.nii.gz", image, g)
        write_labels(root / "labelsTr" / f"b{i}.nii.gz", labels, g)
        training.append({"image": f"./imagesTr/b{i}.nii.gz", "label": f"./labelsTr/b{i}.nii.gz"})
    (root / "dataset.json").write_text(
        json.dumps(
            {
                "modality": {"0": "CT"},
                "labels": {"0": "background", "1": "liver", "2": "spleen"},
                "training": training,
            }
        )
    )
    return root


def test_key_slice_and_prompts_are_middle_and_reproducible():
    m = np.zeros((11, 6, 6), np.uint8)
    m[2:9, 1:4, 1:4] = 1
    assert key_index(m == 1) == 5

    def rng():
        return np.random.default_rng(0)

    a = reference_prompts(m, {1: "x", 2: "absent"}, jitter=1, rng=rng())
    assert [b.label for b in a] == [1] and a == reference_prompts(m, {1: "x"}, jitter=1, rng=rng())


def test_medsam2_3d_threshold_model(tmp_path):
    out = tmp_path / "out"
    r = run_evaluation(
        bright_ct_task(tmp_path / "Task97"),
        "medsam2-3d",
        out,
        params={"model": "threshold"},
        workers=1,
    )
    assert r.n_ok == 2
    rows = read_rows(out / "results.csv")
    assert {x["structure"] for x in rows} == {"liver", "spleen"}
    assert min(float(x["dice"]) for x in rows) > 0.95
    assert min(float(x["nsd"]) for x in rows) > 0.95
    assert {x["key_slice"] for x in rows if x["structure"] == "liver"} == {"4"}
    s = r.summary["results"]
    assert s["dice"]["per_task"][0]["task"] == "Task97" and "iqr" in s["nsd"]["over_tasks"]
    jit = run_evaluation(
        tmp_path / "Task97",
        "medsam2-3d",
        tmp_path / "jit",
        params={"model": "threshold", "jitter": 3, "seed": 1},
        workers=1,
        report=False,
    )
    boxes = [x["box"] for x in read_rows(tmp_path / "jit" / "results.csv")]
    assert boxes != [x["box"] for x in rows] and jit.n_ok == 2


def test_medsam2_video_first_frame_forward(tmp_path):
    from napari_segeval.io import Geometry, write_image, write_labels

    folder = tmp_path / "echo" / "patient0001"
    folder.mkdir(parents=True)
    labels = np.zeros((6, 20, 20), np.uint8)
    for t in range(6):
        labels[t, 4 + t // 2 : 12 + t // 2, 5:12] = 1
    labels[1:, 14:18, 14:18] = 3  # appears on frame 1
    image = np.where(labels > 0, 220, 20).astype(np.uint8)
    g = Geometry.identity(3)
    write_image(folder / "patient0001_2CH_half_sequence.mhd", image, g)
    write_labels(folder / "patient0001_2CH_half_sequence_gt.mhd", labels, g)
    out = tmp_path / "out"
    r = run_evaluation(
        tmp_path / "echo", "medsam2-video", out, params={"model": "threshold"}, workers=1
    )
    assert r.n_ok == 1
    rows = {x["structure"]: x for x in read_rows(out / "results.csv")}
    assert set(rows) == {"lv_cavity", "left_atrium"}
    assert rows["lv_cavity"]["key_slice"] == "0" and rows["left_atrium"]["key_slice"] == "1"
    assert min(float(x["dice"]) for x in rows.values()) > 0.95
    assert rows["lv_cavity"]["nsd"] == ""  # no surface metrics across time
    assert r.summary["results"]["per_clip"][0]["case"] == "patient0001_2CH_half_sequence"


def test_msd_robust_attack_hook(msd_task, tmp_path):
    attacks = [{"name": "_segeval_toy:shift_attack", "shift": 2}]
    r = run_evaluation(
        msd_task,
        "msd-robust",
        tmp_path / "o",
        params={"model": TOY, "attacks": attacks},
        workers=1,
        report=False,
    )
    rows = read_rows(tmp_path / "o" / "results.csv")
    cond = "_segeval_toy:shift_attack shift=2"
    assert {x["condition"] for x in rows} == {"clean", cond}
    drops = r.summary["results"]["dice_drop"]
    assert drops["cube"][cond] > 0.2 and drops["ball"][cond] > 0.2


@pytest.mark.parametrize(
    ("attack", "message"),
    [
        (
            {"name": "bogus", "eps": 0.03},
            "attack {'name': 'bogus', 'eps': 0.03}: unknown attack "
            "'bogus': use one of fgsm, pgd, apgd-ce, apgd-dlr, square, fab, noise-gaussian, "
            "noise-uniform",
        ),
        (
            {"name": "pgd", "eps": -1},
            "attack {'name': 'pgd', 'eps': -1}: eps must be finite and >= 0, got -1",
        ),
        (
            {"name": "pgd", "eps": 0.1, "stpes": 5},
            "attack {'name': 'pgd', 'eps': 0.1, 'stpes': 5}: "
            "unknown option 'stpes' (options: batch_size, clamp, eps, gradient, keep_best, loss, norm, "
            "p_init, random_start, reference, restarts, robust_threshold, schedule, seed, select, "
            "sigma, step_size, steps, target_ranks, weighting)",
        ),
        (
            {"name": "pgd", "eps": 0.1, "reference": "x"},
            "attack {'name': 'pgd', 'eps': 0.1, "
            "'reference': 'x'}: reference must be 'auto', 'labels' or 'prediction', got 'x'",
        ),
        (
            {"name": "no_such_module:attack"},
            "cannot import model factory 'no_such_module:attack': No module named 'no_such_module'",
        ),
        ("pgd", 'attack \'pgd\': expected an object such as {"name": "pgd", "eps": 0.05}'),
    ],
)
def test_msd_robust_bad_attack_is_one_line_before_any_case_runs(
    msd_task, tmp_path, attack, message
):
    from napari_segeval._errors import SegEvalError

    with pytest.raises(SegEvalError) as err:
        run_evaluation(
            msd_task,
            "msd-robust",
            tmp_path / "o",
            params={"model": TOY, "attacks": [attack]},
            workers=1,
            report=False,
        )
    assert str(err.value) == message
    assert not (tmp_path / "o").exists()


def test_msd_robust_fgsm_through_attacks_module(tmp_path):
    from napari_segeval.io import write_image, write_labels
    from napari_segeval.phantoms.ct import make_ct_case

    root = tmp_path / "Task92"
    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    case = make_ct_case(3001, shape=(16, 48, 48), tumour=False)
    write_image(root / "imagesTr" / "ct.nii.gz", case.image, case.geometry)
    write_labels(root / "labelsTr" / "ct.nii.gz", case.labels, case.geometry)
    (root / "dataset.json").write_text(
        json.dumps(
            {
                "modality": {"0": "CT"},
                "labels": {"0": "background", "1": "liver"},
                "training": [{"image": "./imagesTr/ct.nii.gz", "label": "./labelsTr/ct.nii.gz"}],
            }
        )
    )
    r = run_evaluation(
        root,
        "msd-robust",
        tmp_path / "o",
        params={"device": "cpu", "attacks": [{"name": "fgsm", "eps": 0.5}]},
        workers=1,
        report=False,
    )
    assert r.n_ok == 1, r.summary["failed"]
    rows = read_rows(tmp_path / "o" / "results.csv")
    assert {x["condition"] for x in rows} == {"clean", "fgsm-linf eps=0.5"}
    eps_raw = {float(x["eps_raw"]) for x in rows if x["condition"] != "clean"}
    assert len(eps_raw) == 1 and eps_raw.pop() > 1.0  # 0.5 normalized units in HU


def test_uncertainty_protocol_selective_evaluation(tmp_path):
    task = write_msd(tmp_path / "Task96", 5)
    r = run_evaluation(
        task, "uncertainty", tmp_path / "o", params={"model": TOY}, workers=1, report=False
    )
    rows = read_rows(tmp_path / "o" / "results.csv")
    assert {x["structure"] for x in rows} == {"background", "cube", "ball"}
    assert all(0.0 <= float(x["uncertainty"]) <= 1.0 for x in rows)
    s = r.summary["results"]
    assert s["analysis"] == "selective"
    assert s["background_included"] is True and "all labelled cases" in s["note"]
    assert s["uncertainty_score"] == "entropy-band"
    assert s["all_cases"]["dice"] == pytest.approx(100.0) and s["all_cases"]["n_cases"] == 5
    # round half up: 5% of 5 cases is 0.25 -> 0 set aside, 10% is 0.5 -> 1
    assert sorted(s["retained"]) == ["0.05", "0.10"]
    assert [len(s["retained"][k]["removed"]) for k in ("0.05", "0.10")] == [0, 1]
    top = max(rows, key=lambda x: float(x["uncertainty"]))["case"]
    assert s["retained"]["0.10"]["removed"] == [top] and s["retained"]["0.10"]["n_cases"] == 4
    rc = s["risk_coverage"]
    # descending coverage, one point per block of tied scores, then the end point
    assert rc["n"] == 5 and rc["coverage"][0] == 1.0 and rc["coverage"][-1] == 0.0
    assert len(rc["coverage"]) == len({x["uncertainty"] for x in rows}) + 1
    assert rc["aurc"] == pytest.approx(0.0, abs=1e-9)  # every case is perfect: no risk
    assert rc["augrc"] == pytest.approx(0.0, abs=1e-9) and rc["n_failures"] == 0
    assert rc["failure_below"] == 0.75 and math.isnan(rc["failure_auroc"])  # only successes
    assert s["dice_vs_uncertainty"]["n"] == 5
    assert "auv" not in json.dumps(s).lower()


def test_uncertainty_score_auv_is_refused_with_its_new_name(tmp_path):
    from napari_segeval.evaluation.protocols.uncertainty import case_uncertainty

    with pytest.raises(Exception, match="entropy-band"):
        case_uncertainty("auv", np.ones((2, 2, 2)) / 2, np.zeros((2, 2), int))


def test_uncertainty_uses_published_test_split():
    p = get_protocol("uncertainty")
    from napari_segeval.evaluation.layouts import CaseSpec

    specs = [
        CaseSpec("a", ("a",), "la", split="train"),
        CaseSpec("b", ("b",), "lb", split="test"),
        CaseSpec("c", ("c",), None, split="test"),
    ]
    assert [s.case_id for s in p.cases(specs, p.resolve_params())] == ["b"]


def isic_folder(root, n=5):
    from PIL import Image

    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        mask = np.zeros((20, 24), np.uint8)
        y, x = rng.integers(2, 8), rng.integers(2, 10)
        mask[y : y + 8, x : x + 9] = 255
        rgb = np.where(mask[..., None] > 0, 100, 0).astype(np.uint8).repeat(3, axis=2)
        Image.fromarray(rgb).save(root / f"ISIC_{i:07d}.png")
        Image.fromarray(mask).save(root / f"ISIC_{i:07d}_segmentation.png")
    return root


def test_cv5_2d_with_toy_model(tmp_path):
    root = isic_folder(tmp_path / "isic")
    r = run_evaluation(root, "cv5-2d", tmp_path / "o", params={"model": TOY}, workers=1)
    assert r.n_ok == 5
    splits = json.loads((tmp_path / "o" / "splits.json").read_text())
    assert splits["source"] == "seeded k-fold grouped by patient"
    assert sorted(splits["folds"].values()) == [0, 1, 2, 3, 4]
    cv = r.summary["results"]
    assert cv["dice"]["average"]["mean"] == pytest.approx(100.0)
    assert cv["dice"]["average"]["std"] == 0.0 and len(cv["dice"]["average"]["folds"]) == 5
    assert set(cv["dice"]["per_class"]) == {"lesion"} and cv["names"]["dice"] == "mDSC"


def test_cv5_2d_without_model_says_so(tmp_path):
    root = isic_folder(tmp_path / "isic")
    r = run_evaluation(
        root, "cv5-2d", tmp_path / "o", params={"model": None}, workers=1, report=False
    )
    assert r.n_failed == 5 and "needs a 2D model" in r.summary["failed"][0]["error"]


@pytest.mark.parametrize(
    "name,bad,match",
    [
        ("medsam2-3d", {"jitter": -3}, "jitter"),
        ("medsam2-video", {"jitter": -3}, "jitter"),
        ("interactive", {"rounds": -1}, "rounds"),
        ("interactive", {"refine_prompt": "scribble"}, "refine_prompt"),
        ("msd-robust", {"overlap": 1.5}, "overlap"),
        ("uncertainty", {"analysis": "filter"}, "analysis"),
        ("uncertainty", {"score": "auv"}, "entropy-band"),
        ("cv5-2d", {"headline": "best"}, "headline"),
        ("cv5-2d", {"model": "builtin-2d", "iterations": "many"}, "training parameters"),
    ],
)
def test_every_protocol_checks_its_parameters_in_one_hook(name, bad, match):
    """A bad value is refused by Protocol.resolve_params (its record's ``check``), before
    any case is selected, prepared or run; in one line."""
    from napari_segeval._errors import SegEvalError

    proto = get_protocol(name)
    with pytest.raises(SegEvalError, match=match) as err:
        proto.resolve_params(bad)
    assert "\n" not in str(err.value)


def test_every_parameter_record_pickles_and_round_trips_through_run_json():
    """Records travel to spawned processes and Dask workers by reference, and a results
    folder's ``params`` read back (:meth:`Params.stored`) give the same record."""
    import pickle

    from napari_segeval.evaluation.protocols import REGISTRY

    for name in REGISTRY:
        proto = get_protocol(name)
        for preset in [None, *proto.presets]:
            p = proto.resolve_params(preset=preset)
            assert pickle.loads(pickle.dumps(p)) == p
            assert proto.params.stored(json.loads(json.dumps(p.to_json()))) == p
            assert proto.resolve_params(p) == p  # a resolved record resolves to itself


def test_an_old_results_folders_params_read_with_todays_defaults():
    """Parameters added since a folder was written keep their defaults; names this version
    no longer has are left out (the folder is read as written, unchecked)."""
    from napari_segeval.evaluation.protocols.interactive import InteractiveParams

    old = InteractiveParams.stored({"rounds": 3, "gone": 1, "jitter": -1})
    assert old.rounds == 3 and old.slice_choice == "oracle" and old.jitter == -1
