"""``cv5-2d`` with the built-in 2D U-Net trained per fold inside the protocol (tiny recipe)."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation import run_evaluation
from napari_segeval.evaluation.layouts import CaseSpec, load_layout
from napari_segeval.evaluation.protocols import cv5_2d, get_protocol

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
#: Shrunk training so each fold takes a fraction of a second (skin: mDSC 89 %, the bound is
#: 50; polyp: 2 absences under the preset, 3 at 30 iterations).
TINY = {"iterations": 15, "size": [32, 40], "width": 8}
#: Training that only has to run: for the tests of files, folds and counts (no Dice bound).
PLUMBING = {**TINY, "iterations": 5}


def read_rows(out: Path) -> list[dict]:
    with open(out / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def fold_records(out: Path) -> dict[int, dict]:
    return {int(p.stem[4:]): json.loads(p.read_text()) for p in (out / "models").glob("fold*.json")}


@pytest.fixture(scope="module")
def skin_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cv") / "skin"
    return run_evaluation(SAMPLE / "skin", "cv5-2d", out, params=TINY, workers=1, report=False)


def test_builtin_is_the_default():
    assert get_protocol("cv5-2d").resolve_params().model == "builtin-2d"


@pytest.mark.slow
def test_folds_partition_and_no_case_scored_by_its_own_training(skin_run):
    out = skin_run.output_dir
    assert skin_run.n_ok == 20 and skin_run.n_failed == 0
    folds = json.loads((out / "splits.json").read_text())["folds"]
    everything = {s.case_id for s in load_layout(SAMPLE / "skin")}
    assert set(folds) == everything and sorted(set(folds.values())) == [0, 1, 2, 3, 4]
    records = fold_records(out)
    assert sorted(records) == [0, 1, 2, 3, 4]
    for k, rec in records.items():
        test = {c for c, f in folds.items() if f == k}
        train = set(rec["train_cases"])
        assert train.isdisjoint(test) and train | test == everything
        assert rec["num_classes"] == 2 and rec["config"]["iterations"] == TINY["iterations"]
        assert rec["config"]["seed"] == k and (out / "models" / rec["model"]).is_file()
    rows = read_rows(out)
    assert len(rows) == 20
    for r in rows:
        k = int(r["fold"])
        assert k == folds[r["case"]] and r["model_file"] == f"models/fold{k}.pt"
        assert r["case"] not in records[k]["train_cases"] and r["n_train"] == "16"


@pytest.mark.slow
def test_summary_mean_std_over_folds_in_percent(skin_run):
    res = skin_run.summary["results"]
    assert res["names"] == {"dice": "mDSC", "iou": "mIoU", "recall": "mRec", "precision": "mPrec"}
    for m in ("dice", "iou", "recall", "precision"):
        avg = res[m]["average"]
        assert len(avg["folds"]) == 5 and 0 <= avg["mean"] <= 100 and avg["std"] >= 0
    assert res["dice"]["average"]["mean"] > 50  # a trained model, not chance
    assert res["model"]["iterations"] == TINY["iterations"] and res["model"]["size"] == [32, 40]
    assert res["model"]["n_train_per_fold"] == {str(k): 16 for k in range(5)}


@pytest.mark.slow
def test_deterministic_across_runs(skin_run, tmp_path):
    import torch

    again = run_evaluation(
        SAMPLE / "skin", "cv5-2d", tmp_path / "o", params=TINY, workers=1, report=False
    )
    first = {(r["case"], r["structure"]): r["dice"] for r in read_rows(skin_run.output_dir)}
    second = {(r["case"], r["structure"]): r["dice"] for r in read_rows(again.output_dir)}
    assert first == second
    a = torch.load(skin_run.output_dir / "models" / "fold2.pt", weights_only=True)
    b = torch.load(again.output_dir / "models" / "fold2.pt", weights_only=True)
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])


def test_resume_reuses_models_and_retrains_on_new_recipe(tmp_path):
    cases = load_layout(SAMPLE / "skin")[:10]
    out = tmp_path / "o"
    params = {**TINY, "folds": 2, "iterations": 5}
    run_evaluation(cases, "cv5-2d", out, params=params, workers=1, report=False)
    stamp = {p.name: p.stat().st_mtime_ns for p in (out / "models").glob("*.pt")}
    (out / "cases" / next(iter(sorted(p.name for p in (out / "cases").iterdir())))).unlink()
    r = run_evaluation(cases, "cv5-2d", out, params=params, workers=1, report=False)
    assert r.n_ok == 10 and r.n_skipped == 9
    assert stamp == {p.name: p.stat().st_mtime_ns for p in (out / "models").glob("*.pt")}
    specs = [CaseSpec.from_dict(s.to_dict()) for s in cases]
    for s in specs:
        s.fold = 0 if s.case_id in {c.case_id for c in cases[:5]} else 1
    changed = get_protocol("cv5-2d").resolve_params({**params, "iterations": 6})
    cv5_2d.prepare(specs, changed, tmp_path / "p")
    assert (
        json.loads((tmp_path / "p" / "models" / "fold0.json").read_text())["config"]["iterations"]
        == 6
    )


@pytest.mark.slow
def test_refuses_a_model_that_saw_the_case(skin_run):
    out = skin_run.output_dir
    records = fold_records(out)
    victim = records[0]["train_cases"][0]
    spec = next(s for s in load_layout(SAMPLE / "skin") if s.case_id == victim)
    spec.fold, spec.meta = 0, {cv5_2d.META_KEY: str(out / "models" / "fold0.pt")}
    params = get_protocol("cv5-2d").resolve_params(TINY)
    with pytest.raises(SegEvalError, match="training case"):
        cv5_2d.run_case(spec, params)
    spec.meta = {}
    with pytest.raises(SegEvalError, match="no trained builtin-2d model"):
        cv5_2d.run_case(spec, params)


def test_no_model_says_so(tmp_path):
    r = run_evaluation(
        load_layout(SAMPLE / "skin")[:5],
        "cv5-2d",
        tmp_path / "o",
        params={"model": None},
        workers=1,
        report=False,
    )
    assert r.n_failed == 5 and "needs a 2D model" in r.summary["failed"][0]["error"]
    assert not (tmp_path / "o" / "models").exists()


def cli(argv: list[str]) -> int:
    from napari_segeval.cli import _evaluate

    parser = argparse.ArgumentParser()
    _evaluate.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.parametrize(
    "task, classes, workers",
    [("skin", {"lesion"}, 1), ("polyp", {"neoplastic", "non_neoplastic"}, 2)],
)
@pytest.mark.slow
def test_segeval_evaluate_end_to_end(task, classes, workers, tmp_path, capsys):
    out = tmp_path / task
    tiny = [a for k, v in PLUMBING.items() for a in ("--param", f"{k}={json.dumps(v)}")]
    rc = cli(
        [
            "evaluate",
            str(SAMPLE / task),
            "--protocol",
            "cv5-2d",
            "-o",
            str(out),
            "--workers",
            str(workers),
            *tiny,
        ]
    )
    assert rc == 0
    rows = read_rows(out)
    assert {"case", "structure", "condition", "dice", "fold"} <= set(rows[0])
    assert len({r["case"] for r in rows}) == 20 and {r["structure"] for r in rows} == classes
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_ok"] == 20 and set(summary["results"]["dice"]["per_class"]) == classes
    for m in ("dice", "iou", "recall", "precision"):
        assert {"mean", "std", "folds"} <= set(summary["results"][m]["average"])
    assert {r["num_classes"] for r in fold_records(out).values()} == {len(classes) + 1}
    assert (out / "report.html").is_file()


# --- patient-grouped folds and the borst2026 preset -------------------------------------

TOY = "_segeval_toy:threshold_dense"


def camus_frames(root: Path, n_patients: int = 6) -> Path:
    """CAMUS-named 2D frames: LV cavity 1, myocardium 2; the left atrium (3) only in 2CH views."""
    import numpy as np
    import SimpleITK as sitk

    rng = np.random.default_rng(0)
    for i in range(1, n_patients + 1):
        pid = f"patient{i:04d}"
        (root / pid).mkdir(parents=True, exist_ok=True)
        for view in ("2CH", "4CH"):
            for phase in ("ED", "ES"):
                lab = np.zeros((24, 20), np.uint8)
                lab[4:12, 4:10], lab[4:12, 10:13] = 1, 2
                if view == "2CH":
                    lab[15:21, 5:11] = 3
                img = (np.minimum(lab, 2) + rng.normal(0, 0.05, lab.shape)).astype(np.float32)
                for arr, suffix in ((img, ""), (lab, "_gt")):
                    sitk.WriteImage(
                        sitk.GetImageFromArray(arr),
                        str(root / pid / f"{pid}_{view}_{phase}{suffix}.nii.gz"),
                    )
    return root


def rows_of(result) -> list[dict]:
    from napari_segeval.evaluation import store

    _, records = store.load_records(result.output_dir)
    return [r for r in store.result_rows(records) if r.get("status") == "ok"]


def test_borst2026_preset_on_generated_camus(tmp_path):
    data = camus_frames(tmp_path / "camus")
    r = run_evaluation(
        data,
        "cv5-2d",
        tmp_path / "preset",
        preset="borst2026",
        params={"model": TOY},
        workers=1,
        report=False,
    )
    assert r.n_ok == 24 and r.n_failed == 0
    assert r.summary["preset"] == "borst2026" and r.summary["protocol_version"] == "1.4"
    splits = json.loads((tmp_path / "preset" / "splits.json").read_text())
    folds_of: dict[str, set] = {}
    for case, fold in splits["folds"].items():
        folds_of.setdefault(case.split("_")[0], set()).add(fold)
    assert len(folds_of) == 6 and all(len(f) == 1 for f in folds_of.values())
    rows = rows_of(r)
    assert {x["structure"] for x in rows} == {
        "background",
        "lv_cavity",
        "myocardium",
        "left_atrium",
    }
    for x in rows:
        assert x["fold"] == splits["folds"][x["case"]]
        if x["structure"] == "left_atrium" and "_4CH_" in x["case"]:  # absent from both: 0
            assert (x["n_ref"], x["n_pred"]) == (0, 0)
            assert [x[m] for m in ("dice", "iou", "recall", "precision")] == [0.0] * 4
    res = r.summary["results"]
    assert res["background_included"] is True and res["empty"] == "zero"
    assert set(res["dice"]["per_class"]) == {"background", "lv_cavity", "myocardium", "left_atrium"}
    assert res["dice"]["per_class"]["left_atrium"]["mean"] == 0.0  # never predicted
    pooled = res["pooled"]["dice"]
    assert len(pooled["average"]["folds"]) == 5 and pooled["per_class"]["lv_cavity"]["mean"] > 95

    defaults = run_evaluation(
        data, "cv5-2d", tmp_path / "defaults", params={"model": TOY}, workers=1, report=False
    )
    rows = rows_of(defaults)
    assert "background" not in {x["structure"] for x in rows}
    la_4ch = [x["dice"] for x in rows if x["structure"] == "left_atrium" and "_4CH_" in x["case"]]
    assert la_4ch == [1.0] * 12  # the defaults' empty=one
    assert (
        json.loads((tmp_path / "defaults" / "splits.json").read_text())["folds"] == splits["folds"]
    )


def test_preset_empty_handling_is_the_papers_formula():
    """empty=zero over range(num_classes) gives what the paper's +1e-6 formula gives.

    IoU, recall and precision agree with |A∩B|/(|A∪B|+e), TP/(TP+FN+e), TP/(TP+FP+e) to
    1e-6; Dice is the corrected 2|A∩B|/(|A|+|B|), 0 where the paper's 2|A∩B|/(|A∪B|+e) is 0/e.
    """
    import numpy as np

    from napari_segeval.evaluation.protocols import _common as C

    rng = np.random.default_rng(7)
    eps = 1e-6
    for trial in range(40):
        ref = rng.integers(0, 3, (12, 14)).astype(np.uint8)
        pred = rng.integers(0, 3, (12, 14)).astype(np.uint8)
        if trial % 4 == 1:
            ref[ref == 2], pred[pred == 2] = 0, 0  # class 2 absent from both
        if trial % 4 == 2:
            ref[ref == 1] = 0  # class 1 only predicted
        if trial % 4 == 3:
            pred[pred == 2] = 0  # class 2 only in the reference
        classes = cv5_2d.class_set({1: "a", 2: "b"}, ref, pred)
        assert list(classes) == [0, 1, 2]
        rows = C.score(ref, pred, (1.0, 1.0), classes, "clean", empty="zero", surface=False)
        cv5_2d.add_counts(rows, ref, pred)
        for row in rows:
            k = row["label"]
            a, b = ref == k, pred == k
            inter, union = int((a & b).sum()), int((a | b).sum())
            assert (row["n_tp"], row["n_ref"], row["n_pred"]) == (inter, int(a.sum()), int(b.sum()))
            theirs = {
                "iou": inter / (union + eps),
                "recall": inter / (a.sum() + eps),
                "precision": inter / (b.sum() + eps),
            }
            for m, v in theirs.items():
                assert abs(row[m] - v) <= 1e-6, (trial, k, m)
            if union == 0:
                assert row["dice"] == 0.0 == 2 * inter / (union + eps)
            else:
                assert row["dice"] == pytest.approx(2 * inter / (a.sum() + b.sum()))


def isic_official(root: Path) -> Path:
    """The sample skin cases under the official ISIC 2018 folder names (12 / 3 / 5)."""
    import shutil

    for i in range(1, 21):
        split = "Training" if i <= 12 else "Validation" if i <= 15 else "Test"
        for src, folder, name in (
            (f"skin_{i:03d}.png", f"ISIC2018_Task1-2_{split}_Input", f"ISIC_{i:07d}.png"),
            (
                f"skin_{i:03d}_segmentation.png",
                f"ISIC2018_Task1_{split}_GroundTruth",
                f"ISIC_{i:07d}_segmentation.png",
            ),
        ):
            (root / folder).mkdir(parents=True, exist_ok=True)
            shutil.copy(SAMPLE / "skin" / src, root / folder / name)
    return root


@pytest.mark.slow
def test_borst2026_pools_the_official_isic_folders_as_the_papers_image_count(tmp_path):
    data = isic_official(tmp_path / "isic")
    assert get_protocol("cv5-2d").resolve_params(preset="borst2026").cv_splits == {}
    ds = run_evaluation(
        data, "cv5-2d", tmp_path / "o", preset="borst2026", params=PLUMBING, workers=1, report=False
    )
    assert ds.n_ok == 20  # Training + Validation + Test folders, all in the folds
    folds = json.loads((tmp_path / "o" / "splits.json").read_text())["folds"]
    assert sorted(folds) == [f"ISIC_{i:07d}" for i in range(1, 21)]


@pytest.mark.slow
def test_isic_training_folder_folds_and_official_test_scored_separately(tmp_path):
    data = isic_official(tmp_path / "isic")
    out = tmp_path / "o"
    r = run_evaluation(
        data,
        "cv5-2d",
        out,
        preset="borst2026",
        params={**PLUMBING, "holdout": "test", "cv_splits": {"isic": ["train"]}},
        workers=1,
        report=True,
    )
    assert r.n_ok == 17 and r.n_failed == 0  # 12 cross-validated + 5 held out; no validation
    folds = json.loads((out / "splits.json").read_text())["folds"]
    assert sorted(folds) == [f"ISIC_{i:07d}" for i in range(1, 13)]
    rows = read_rows(out)
    test_rows = [x for x in rows if x["split"] == "test"]
    assert {x["case"] for x in test_rows} == {f"ISIC_{i:07d}" for i in range(16, 21)}
    assert all(x["fold"] == "" and x["model_file"] == "models/all.pt" for x in test_rows)
    assert {x["split"] for x in rows} == {"train", "test"}
    final = json.loads((out / "models" / "all.json").read_text())
    assert sorted(final["train_cases"]) == sorted(folds)
    held = r.summary["results"]["holdout"]
    assert held["split"] == "test" and held["n_cases"] == 5
    assert set(held["dice"]["per_class"]) == {"background", "lesion"}
    assert len(r.summary["results"]["dice"]["average"]["folds"]) == 5
    assert "Preset <b>borst2026</b>" in (out / "report.html").read_text()


@pytest.mark.parametrize(
    "task, classes",
    [("skin", {"background", "lesion"}), ("polyp", {"background", "neoplastic", "non_neoplastic"})],
)
@pytest.mark.slow
def test_cli_preset_on_sample_data(task, classes, tmp_path, capsys):
    out = tmp_path / task  # TINY: the polyp absences need a model that learnt a little
    tiny = [a for k, v in TINY.items() for a in ("--param", f"{k}={json.dumps(v)}")]
    rc = cli(
        [
            "evaluate",
            str(SAMPLE / task),
            "--protocol",
            "cv5-2d",
            "--preset",
            "borst2026",
            "-o",
            str(out),
            "--workers",
            "1",
            "--no-progress",
            *tiny,
        ]
    )
    assert rc == 0
    assert "headline (accumulated, %, mean +- std over folds): mDice " in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    run = json.loads((out / "run.json").read_text())
    assert summary["preset"] == run["preset"] == "borst2026" and summary["n_ok"] == 20
    assert run["params"]["include_background"] is True and run["params"]["empty"] == "zero"
    assert set(summary["results"]["dice"]["per_class"]) == classes
    assert summary["differences_from_paper"] == list(cv5_2d.BORST2026.differences)
    assert set(summary["results"]["pooled"]["dice"]["per_class"]) == classes
    res = summary["results"]
    assert res["headline"]["reading"] == "accumulated" and res["names"]["dice"] == "mDice"
    assert set(res["per_image"]["dice"]["per_class"]) == classes
    rows = read_rows(out)
    absent = [r for r in rows if r["absent"] == "True"]
    assert res["absences"]["rows"] == len(absent)
    assert all(r["n_ref"] == r["n_pred"] == "0" for r in absent)
    page = (out / "report.html").read_text()
    if task == "polyp":  # one polyp class per image: the other is an absence
        assert absent and 'id="absences"' in page  # the worst cases' switch
    assert "Preset <b>borst2026</b>" in page and "Cross-validation: accumulated" in page


# -- the borst2026 headline: mmsegmentation's IoUMetric reading ----------------------------
def mmseg_iou_metric(pairs, num_classes):
    """An independent port of mmsegmentation's IoUMetric (intersect_and_union per image,
    areas summed, total_area_to_metrics, np.nanmean over classes), fractions."""
    import numpy as np

    total = np.zeros((4, num_classes))
    for ref, pred in pairs:
        ref, pred = np.asarray(ref).ravel(), np.asarray(pred).ravel()
        inter = np.bincount(pred[pred == ref], minlength=num_classes)
        area_pred = np.bincount(pred, minlength=num_classes)
        area_ref = np.bincount(ref, minlength=num_classes)
        total += [inter, area_pred + area_ref - inter, area_pred, area_ref]
    inter, union, area_pred, area_ref = total
    with np.errstate(divide="ignore", invalid="ignore"):
        per = {
            "dice": 2 * inter / (area_pred + area_ref),
            "iou": inter / union,
            "precision": inter / area_pred,
            "recall": inter / area_ref,
        }
    return {m: float(np.nanmean(v)) for m, v in per.items()}, per


def generated_folds(seed, perfect=False):
    """Five folds of polyp-like 2D cases: background plus ONE of two polyp classes per image."""
    import numpy as np

    rng = np.random.default_rng(seed)
    folds = []
    for _ in range(5):
        cases = []
        for _ in range(int(rng.integers(3, 7))):
            ref = np.zeros((24, 24), np.int64)
            k = int(rng.integers(1, 3))
            y, x, h = (int(v) for v in rng.integers(2, 12, 3))
            ref[y : y + h, x : x + h] = k
            pred = ref.copy()
            if not perfect:
                pred = np.roll(pred, int(rng.integers(-3, 4)), axis=int(rng.integers(0, 2)))
                if rng.random() < 0.3:
                    pred[pred > 0] = 3 - k  # the other polyp class
            cases.append((ref, pred))
        folds.append(cases)
    return folds


def fold_rows(folds):
    from napari_segeval.evaluation.protocols import _common as C

    rows = []
    for f, cases in enumerate(folds):
        for i, (ref, pred) in enumerate(cases):
            classes = cv5_2d.class_set({1: "neoplastic", 2: "non_neoplastic"}, ref, pred)
            r = C.score(ref, pred, (1.0, 1.0), classes, "clean", empty="zero", surface=False)
            cv5_2d.add_counts(r, ref, pred)
            rows += [{**x, "case": f"{f}-{i}", "fold": f} for x in r]
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_borst2026_headline_is_mmsegmentations_accumulated_reading(seed):
    import numpy as np

    folds = generated_folds(seed)
    params = get_protocol("cv5-2d").resolve_params(preset="borst2026")
    s = cv5_2d.summarize(fold_rows(folds), params)
    assert s["headline"]["reading"] == "accumulated"
    assert s["names"] == {
        "dice": "mDice",
        "iou": "mIoU",
        "recall": "mRecall",
        "precision": "mPrecision",
    }
    theirs = [mmseg_iou_metric(cases, 3) for cases in folds]
    for m in ("dice", "iou", "recall", "precision"):
        per_fold = [100 * t[0][m] for t in theirs]
        assert s[m]["average"]["folds"] == pytest.approx(per_fold)
        assert s[m]["average"]["mean"] == pytest.approx(np.mean(per_fold))
        assert s[m]["average"]["std"] == pytest.approx(np.std(per_fold, ddof=1))
        for c, name in enumerate(("background", "neoplastic", "non_neoplastic")):
            want = [100 * t[1][m][c] for t in theirs]
            got = s[m]["per_class"][name]["folds"]
            assert got == pytest.approx(want, nan_ok=True)
    assert s["per_image"]["names"]["dice"] == "mDSC"  # the secondary figure keeps its name


def test_borst2026_perfect_prediction_scores_100_where_the_per_image_formula_cannot():
    folds = generated_folds(5, perfect=True)
    params = get_protocol("cv5-2d").resolve_params(preset="borst2026")
    s = cv5_2d.summarize(fold_rows(folds), params)
    for m in ("dice", "iou", "recall", "precision"):
        assert s[m]["average"]["mean"] == pytest.approx(100.0)
        assert s[m]["average"]["std"] == pytest.approx(0.0)
    # one polyp class per image: the per-image mean over range(num_classes) with the
    # absent class at 0 is 2/3
    assert s["per_image"]["dice"]["average"]["mean"] == pytest.approx(200 / 3)
    n_cases = sum(len(c) for c in folds)
    assert s["absences"]["rows"] == n_cases  # one absent polyp class per image


def test_a_class_absent_from_a_whole_fold_is_left_out_of_that_folds_mean():
    import numpy as np

    ref = np.zeros((8, 8), np.int64)
    ref[2:5, 2:5] = 1
    folds = [[(ref, ref)]] * 2  # class 2 named but never present nor predicted
    rows = []
    for f, cases in enumerate(folds):
        for ref_, pred in cases:
            from napari_segeval.evaluation.protocols import _common as C

            r = C.score(
                ref_,
                pred,
                (1.0, 1.0),
                {0: "background", 1: "a", 2: "b"},
                "clean",
                empty="zero",
                surface=False,
            )
            cv5_2d.add_counts(r, ref_, pred)
            rows += [{**x, "case": f"c{f}", "fold": f} for x in r]
    s = cv5_2d.summarize(rows, get_protocol("cv5-2d").resolve_params(preset="borst2026"))
    assert s["dice"]["average"]["mean"] == pytest.approx(100.0)
    assert all(np.isnan(v) for v in s["dice"]["per_class"]["b"]["folds"])
    assert [r["absent"] for r in rows if r["structure"] == "b"] == [True, True]


@pytest.mark.parametrize(
    ("param", "why"),
    [
        ({"size": "abc"}, "invalid literal for int() with base 10: 'a'"),
        ({"lr": "fast"}, "could not convert string to float: 'fast'"),
        ({"size": 64}, "'int' object is not iterable"),
    ],
)
def test_training_parameters_that_are_not_numbers_are_one_line(param, why):
    """Refused when the parameters are resolved (the protocol's one check), before any
    fold trains, and the same line from train_config itself."""
    params = cv5_2d.Cv5Params(**param)
    given = {
        k: params.to_json()[k]
        for k in ("iterations", "batch_size", "lr", "size", "width", "seed", "train_threads")
    }
    with pytest.raises(SegEvalError) as early:
        get_protocol("cv5-2d").resolve_params(param)
    with pytest.raises(SegEvalError) as err:
        cv5_2d.train_config(params, 0)
    assert str(early.value) == str(err.value)
    assert str(err.value) == (
        f"cv5-2d training parameters must be numbers (size two whole numbers), got {given} ({why})"
    )


def test_each_class_of_each_image_gets_a_risk_and_a_slice_row(tmp_path):
    """``risk`` (default): every foreground class row carries a risk in [0, 1], estimated
    without the reference, and ``slices.csv`` one row (slice 0) per image and class with
    its Dice; ``risk=false`` writes neither."""
    import csv

    data = camus_frames(tmp_path / "camus")
    r = run_evaluation(data, "cv5-2d", tmp_path / "risk", params={"model": TOY}, workers=1, report=False)  # fmt: skip
    rows = rows_of(r)
    fg = [x for x in rows if x["label"] not in (0, "0")]
    assert fg and all(0.0 <= float(x["risk"]) <= 1.0 for x in fg)
    with open(tmp_path / "risk" / "slices.csv", newline="") as f:
        slices = list(csv.DictReader(f))
    assert {s["slice"] for s in slices} == {"0"}
    assert {(s["case"], s["structure"]) for s in slices} <= {
        (x["case"], x["structure"]) for x in fg
    }
    assert all(0.0 <= float(s["dice"]) <= 1.0 for s in slices if s["dice"])
    off = run_evaluation(
        data, "cv5-2d", tmp_path / "off", params={"model": TOY, "risk": False}, workers=1,
        report=False,
    )  # fmt: skip
    assert all(x.get("risk") in (None, "") for x in rows_of(off))
    assert not (tmp_path / "off" / "slices.csv").exists()
