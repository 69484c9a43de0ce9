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
#: Shrunk training so each fold takes a fraction of a second.
TINY = {"iterations": 30, "size": [32, 40], "width": 8}


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
    assert get_protocol("cv5-2d").resolve_params()["model"] == "builtin-2d"


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
        assert rec["num_classes"] == 2 and rec["config"]["iterations"] == 30
        assert rec["config"]["seed"] == k and (out / "models" / rec["model"]).is_file()
    rows = read_rows(out)
    assert len(rows) == 20
    for r in rows:
        k = int(r["fold"])
        assert k == folds[r["case"]] and r["model_file"] == f"models/fold{k}.pt"
        assert r["case"] not in records[k]["train_cases"] and r["n_train"] == "16"


def test_summary_mean_std_over_folds_in_percent(skin_run):
    res = skin_run.summary["results"]
    assert res["names"] == {"dice": "mDSC", "iou": "mIoU", "recall": "mRec", "precision": "mPrec"}
    for m in ("dice", "iou", "recall", "precision"):
        avg = res[m]["average"]
        assert len(avg["folds"]) == 5 and 0 <= avg["mean"] <= 100 and avg["std"] >= 0
    assert res["dice"]["average"]["mean"] > 50  # a trained model, not chance
    assert res["model"]["iterations"] == 30 and res["model"]["size"] == [32, 40]
    assert res["model"]["n_train_per_fold"] == {str(k): 16 for k in range(5)}


def test_deterministic_across_runs(skin_run, tmp_path):
    import torch

    again = run_evaluation(SAMPLE / "skin", "cv5-2d", tmp_path / "o", params=TINY, workers=1,
                           report=False)
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
    assert json.loads((tmp_path / "p" / "models" / "fold0.json").read_text())["config"][
        "iterations"] == 6


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
    r = run_evaluation(load_layout(SAMPLE / "skin")[:5], "cv5-2d", tmp_path / "o",
                       params={"model": None}, workers=1, report=False)
    assert r.n_failed == 5 and "needs a 2D model" in r.summary["failed"][0]["error"]
    assert not (tmp_path / "o" / "models").exists()


def cli(argv: list[str]) -> int:
    from napari_segeval.cli import _evaluate

    parser = argparse.ArgumentParser()
    _evaluate.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.parametrize("task, classes, workers", [
    ("skin", {"lesion"}, 1), ("polyp", {"neoplastic", "non_neoplastic"}, 2)])
def test_segeval_evaluate_end_to_end(task, classes, workers, tmp_path, capsys):
    out = tmp_path / task
    tiny = [a for k, v in TINY.items() for a in ("--param", f"{k}={json.dumps(v)}")]
    rc = cli(["evaluate", str(SAMPLE / task), "--protocol", "cv5-2d", "-o", str(out),
              "--workers", str(workers), *tiny])
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
