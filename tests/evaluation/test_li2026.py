"""The uncertainty protocol's li2026 preset: AUV of the training cases, filtered retraining."""

from __future__ import annotations

import json

import pytest
from _segeval_toy import write_msd

from napari_segeval import SegEvalError
from napari_segeval.evaluation import get_protocol, run_evaluation
from napari_segeval.evaluation.layouts import CaseSpec
from napari_segeval.evaluation.protocols import _li2026 as L

FAST = {"auv_model": "threshold", "train_iterations": 2, "train_patch": [8, 16, 16],
        "train_width": 4, "holdout": 0.17}


def specs(n, test=()):
    return [CaseSpec(f"c{i}", (f"c{i}.nii",), f"l{i}.nii", split="test" if i in test else "train")
            for i in range(n)]


def test_split_published_or_seeded_holdout():
    params = get_protocol("uncertainty").resolve_params(preset="li2026")
    train, test, source = L.split(specs(5, test=(1, 3)), params)
    assert [s.case_id for s in test] == ["c1", "c3"] and len(train) == 3
    assert source.startswith("published split")
    train, test, source = L.split(specs(6), params)
    assert len(test) == 2 and len(train) == 4 and "seed 0" in source
    again = L.split(specs(6), params)[1]
    assert [s.case_id for s in again] == [s.case_id for s in test]  # reproducible
    assert not {s.case_id for s in train} & {s.case_id for s in test}
    with pytest.raises(SegEvalError, match="too few|need at least 2"):
        L.split(specs(2), params)
    unlabelled_test = specs(4) + [CaseSpec("t", ("t.nii",), None, split="test")]
    assert "hold-out" in L.split(unlabelled_test, params)[2]  # LiTS: test labels unreleased


def test_condition_names():
    assert [L.condition_name(f) for f in (0, 0.05, 0.1)] == [
        "unfiltered", "filtered 5%", "filtered 10%"]


def test_li2026_end_to_end_removes_the_most_uncertain_training_cases(tmp_path):
    task = write_msd(tmp_path / "Task97", 24)
    out = tmp_path / "o"
    r = run_evaluation(task, "uncertainty", out, preset="li2026", params=FAST, workers=1)
    assert r.n_failed == 0 and r.n_ok == 4
    s = r.summary["results"]
    assert s["analysis"] == "filter-training" and s["background_included"] is True
    conds = s["conditions"]
    assert list(conds) == ["unfiltered", "filtered 5%", "filtered 10%"]
    assert [conds[c]["n_train"] for c in conds] == [20, 19, 18]  # quantile rule on 20
    auv = json.loads((out / "auv.json").read_text())
    assert auv["model"]["name"] == "threshold" and len(auv["cases"]) == 20
    ranked = sorted(auv["cases"], key=lambda c: -c["auv"])
    assert conds["filtered 5%"]["removed"] == [ranked[0]["case"]]
    assert sorted(conds["filtered 10%"]["removed"]) == sorted(c["case"] for c in ranked[:2])
    assert ranked[0]["auv"] == 1.0 and ranked[-1]["auv"] == 0.0
    test_ids = {x["case_id"] for x in json.loads((out / "cases.json").read_text())["cases"]}
    assert not test_ids & {c["case"] for c in auv["cases"]}  # AUV of training cases only
    for name in ("unfiltered", "filtered_5pct", "filtered_10pct"):
        rec = json.loads((out / "models" / f"li2026_{name}.json").read_text())
        assert not test_ids & set(rec["train_cases"])
        assert rec["config"]["optimizer"] == "sgd-poly" and rec["config"]["lr"] == 0.01
    assert all(0.0 <= c["dice"] <= 100.0 for c in conds.values())
    rows = [x for x in (out / "results.csv").read_text().splitlines()[1:]]
    assert len(rows) == 4 * 3 * 3  # test cases x conditions x (background, cube, ball)
    page = (out / "report.html").read_text()
    assert "Training filtered by AUV" in page and "li2026" in page
    assert s["auv_features"].startswith("threshold probabilities")
    assert json.loads((out / "li2026.json").read_text())["conditions"]["filtered 10%"]["n_train"] == 18
    # a resumed run trains nothing again
    before = (out / "models" / "li2026_unfiltered.pt").stat().st_mtime_ns
    run_evaluation(task, "uncertainty", out, preset="li2026", params=FAST, workers=1)
    assert (out / "models" / "li2026_unfiltered.pt").stat().st_mtime_ns == before


def test_identical_training_lists_share_one_model(tmp_path):
    task = write_msd(tmp_path / "Task98", 6)
    out = tmp_path / "o"
    r = run_evaluation(task, "uncertainty", out, preset="li2026",
                       params={**FAST, "holdout": 0.33}, workers=1, report=False)
    conds = r.summary["results"]["conditions"]
    assert [c["n_train"] for c in conds.values()] == [4, 4, 4]  # 5 % and 10 % of 4: none
    assert {c["model"] for c in conds.values()} == {"models/li2026_unfiltered.pt"}
    assert sorted(p.name for p in (out / "models").glob("*.pt")) == ["li2026_unfiltered.pt"]
    assert r.summary["results"]["test_set"].startswith("seeded hold-out")
