"""The uncertainty protocol's li2026 preset: AUV of the training cases, filtered retraining."""

from __future__ import annotations

import json

import pytest
from _segeval_toy import write_msd
from _small_sample import cropped_sample

from napari_segeval import SegEvalError
from napari_segeval.evaluation import get_protocol, run_evaluation
from napari_segeval.evaluation.layouts import CaseSpec
from napari_segeval.evaluation.protocols import _li2026 as L

FAST = {
    "auv_model": "threshold",
    "train_iterations": 2,
    "train_patch": [8, 16, 16],
    "train_width": 4,
    "holdout": 0.17,
}


def specs(n, test=()):
    return [
        CaseSpec(f"c{i}", (f"c{i}.nii",), f"l{i}.nii", split="test" if i in test else "train")
        for i in range(n)
    ]


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
        "unfiltered",
        "filtered 5%",
        "filtered 10%",
    ]


@pytest.mark.slow
def test_li2026_end_to_end_removes_the_most_uncertain_training_cases(tmp_path):
    task = write_msd(tmp_path / "Task97", 24)
    out = tmp_path / "o"
    r = run_evaluation(task, "uncertainty", out, preset="li2026", params=FAST, workers=1)
    assert r.n_failed == 0 and r.n_ok == 4
    s = r.summary["results"]
    assert s["analysis"] == "filter-training" and s["background_included"] is True
    conds = s["conditions"]
    assert list(conds) == ["unfiltered", "filtered 5%", "filtered 10%", "DUO"]
    assert [conds[c]["n_train"] for c in conds] == [20, 19, 18, 20]  # quantile rule on 20
    assert [conds[c]["loss"] for c in conds] == ["ce-dice"] * 3 + ["duo"]
    assert s["auv_energy"].startswith("singular values as they are")
    assert s["duo"]["alpha"] == 0.5 and "not the frozen model's AUV" in s["duo"]["loss"]
    auv = json.loads((out / "auv.json").read_text())
    assert auv["model"]["name"] == "threshold" and len(auv["cases"]) == 20
    assert auv["energy_power"] == 1 and auv["grid"] == [96, 96, 96]  # the authors' code
    ranked = sorted(auv["cases"], key=lambda c: -c["auv"])
    assert conds["filtered 5%"]["removed"] == [ranked[0]["case"]]
    assert sorted(conds["filtered 10%"]["removed"]) == sorted(c["case"] for c in ranked[:2])
    assert ranked[0]["auv"] == 1.0 and ranked[-1]["auv"] == 0.0
    test_ids = {x["case_id"] for x in json.loads((out / "cases.json").read_text())["cases"]}
    assert not test_ids & {c["case"] for c in auv["cases"]}  # AUV of training cases only
    for name in ("unfiltered", "filtered_5pct", "filtered_10pct", "DUO"):
        rec = json.loads((out / "models" / f"li2026_{name}.json").read_text())
        assert not test_ids & set(rec["train_cases"])
        assert rec["config"]["optimizer"] == "sgd-poly" and rec["config"]["lr"] == 0.01
        assert rec["config"]["loss"] == ("duo" if name == "DUO" else "ce-dice")
    assert all(0.0 <= c["dice"] <= 100.0 for c in conds.values())
    rows = [x for x in (out / "results.csv").read_text().splitlines()[1:]]
    assert len(rows) == 4 * 4 * 3  # test cases x conditions x (background, cube, ball)
    page = (out / "report.html").read_text()
    assert "Training filtered by AUV" in page and "li2026" in page
    assert s["auv_features"].startswith("threshold probabilities")
    assert (
        json.loads((out / "li2026.json").read_text())["conditions"]["filtered 10%"]["n_train"] == 18
    )
    # a resumed run trains nothing again
    before = (out / "models" / "li2026_unfiltered.pt").stat().st_mtime_ns
    run_evaluation(task, "uncertainty", out, preset="li2026", params=FAST, workers=1)
    assert (out / "models" / "li2026_unfiltered.pt").stat().st_mtime_ns == before


def test_identical_training_lists_share_one_model(tmp_path):
    task = write_msd(tmp_path / "Task98", 6)
    out = tmp_path / "o"
    r = run_evaluation(
        task,
        "uncertainty",
        out,
        preset="li2026",
        params={**FAST, "holdout": 0.33},
        workers=1,
        report=False,
    )
    conds = r.summary["results"]["conditions"]
    assert [c["n_train"] for c in conds.values()] == [4, 4, 4, 4]  # 5 % and 10 % of 4: none
    assert {c["model"] for c in conds.values()} == {
        "models/li2026_unfiltered.pt",
        "models/li2026_DUO.pt",
    }
    assert sorted(p.name for p in (out / "models").glob("*.pt")) == [
        "li2026_DUO.pt",
        "li2026_unfiltered.pt",
    ]
    assert r.summary["results"]["test_set"].startswith("seeded hold-out")


@pytest.mark.slow
def test_li2026_runs_all_four_conditions_on_the_sample_task(tmp_path):
    """All six sample cases, cropped in-plane to one window of the built-in model."""
    out = tmp_path / "o"
    r = run_evaluation(
        cropped_sample(tmp_path),
        "uncertainty",
        out,
        preset="li2026",
        params={"train_iterations": 4, "train_patch": [16, 32, 32], "train_width": 4},
        workers=1,
        report=True,
    )
    assert r.n_failed == 0 and r.n_ok == 2  # 6 cases, 33 % held out
    s = r.summary["results"]
    assert list(s["conditions"]) == ["unfiltered", "filtered 5%", "filtered 10%", "DUO"]
    assert all(0.0 <= c["dice"] <= 100.0 for c in s["conditions"].values())
    auv = json.loads((out / "auv.json").read_text())
    assert auv["model"]["name"] == "builtin" and auv["energy_power"] == 1
    assert all(c["error"] is None for c in auv["cases"])
    duo = json.loads((out / "models" / "li2026_DUO.json").read_text())
    assert duo["loss"].startswith("DUO") and duo["config"]["loss"] == "duo"
    assert "AUV energy spectrum: singular values as they are" in (out / "report.html").read_text()


def test_preset_energy_is_the_released_codes_singular_values():
    """Their compute_all_semantic_scales (README, ported with torch) against the preset's AUV."""
    import numpy as np
    import torch

    from napari_segeval.uncertainty.auv import class_matrix, semantic_scale

    params = get_protocol("uncertainty").resolve_params(preset="li2026")
    assert params.auv_energy_power == 1 and params.auv_layout == "D_HW"
    rng = np.random.default_rng(3)
    for shape in ((12, 10, 9), (5, 16, 16)):
        logit = rng.normal(size=shape).astype(np.float32) * rng.uniform(0.5, 20)
        mat = torch.from_numpy(logit).reshape(shape[0], -1)
        s = torch.linalg.svd(mat.float(), full_matrices=False)[1] + 1e-6
        p = s / s.sum()
        theirs = float(-(p * torch.log(p)).sum() / torch.log(torch.tensor(float(len(s)))))
        ours = semantic_scale(class_matrix(logit, "D_HW"), params.auv_energy_power)
        assert ours == pytest.approx(theirs, abs=1e-5)
        squares = semantic_scale(class_matrix(logit, "D_HW"), 2)
        assert abs(squares - theirs) > 1e-3  # the paper's squares are another number
