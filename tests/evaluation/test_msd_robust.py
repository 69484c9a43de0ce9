"""msd-robust: the robust rule in the summary, gating, model overrides, skipped attacks, the rog preset."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from _segeval_toy import TOY
from _small_sample import cropped_sample

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation import get_protocol, run_evaluation
from napari_segeval.evaluation.protocols import msd_robust as M
from napari_segeval.evaluation.summary import case_means
from napari_segeval.metrics import ResultsTable

SHIFT = [{"name": "_segeval_toy:shift_attack", "shift": 2}]


def _rows(out: Path) -> list[dict]:
    return [r for r in ResultsTable.from_csv(out / "results.csv") if r.get("status") == "ok"]


def test_summary_states_the_robust_rule_and_its_threshold(msd_task, tmp_path):
    r = run_evaluation(
        msd_task,
        "msd-robust",
        tmp_path / "o",
        params={"model": TOY, "attacks": SHIFT},
        workers=1,
        report=False,
    )
    res = r.summary["results"]
    clean = [v for (_, c), v in case_means(_rows(tmp_path / "o")).items() if c == "clean"]
    assert res["robust_threshold"] == pytest.approx(0.5 * np.mean(clean))
    assert res["robust_rule"] == (
        "A case is robust under an attack when its attacked Dice (mean over its structures) "
        f"is strictly greater than 0.5 x the task's mean clean Dice; the threshold, "
        f"{res['robust_threshold']:.6g}, is computed once from the clean run and used for "
        "every attack."
    )
    cond = "_segeval_toy:shift_attack shift=2"
    assert res["budget"][cond] == {
        "eps": 0.0,
        "eps_raw": {"eps_raw": {"mean": 0.0, "min": 0.0, "max": 0.0}},
    }
    assert "attack_gate_threshold" not in res


def test_robust_accuracy_is_rogs_mean_attacked_dice(msd_task, tmp_path):
    r = run_evaluation(
        msd_task,
        "msd-robust",
        tmp_path / "o",
        params={"model": TOY, "attacks": SHIFT},
        workers=1,
        report=True,
    )
    res = r.summary["results"]
    cond = "_segeval_toy:shift_attack shift=2"
    rows = _rows(tmp_path / "o")
    per_case = {}
    for x in rows:
        if x["condition"] == cond:
            per_case.setdefault(x["case"], []).append(float(x["dice"]))
    mean_attacked = np.mean([np.mean(v) for v in per_case.values()])
    assert res["robust_accuracy"] == {cond: pytest.approx(mean_attacked)}
    assert res["robust_accuracy"][cond] < res["task_mean"]["clean"]  # the attack hurts
    assert "mean attacked Dice" in res["robust_accuracy_definition"]
    assert "robust accuracy" in (tmp_path / "o" / "report.html").read_text()


def test_a_model_whose_plans_do_not_say_mr_minmax_is_named_when_forced():
    params = M.MsdParams(model="builtin-ct", mr_minmax=True, device="cpu")
    note = M.minmax_note(params, "MR")
    assert note is not None and "plans do not say mr_minmax" in note
    assert M.minmax_note(params, "CT") is None  # CT is never min-max scaled
    assert M.minmax_note(replace(params, mr_minmax=None), "MR") is None
    assert "mr_minmax_note" in M.summarize(
        [
            {
                "case": "a",
                "structure": "x",
                "condition": "clean",
                "dice": 1.0,
                "mr_minmax_note": note,
            }
        ],
        M.MsdParams(robust_factor=0.5),
    )


def test_gate_computes_the_threshold_once_before_any_attack(msd_task, tmp_path):
    out = tmp_path / "o"
    r = run_evaluation(
        msd_task,
        "msd-robust",
        out,
        params={"model": TOY, "attacks": SHIFT, "gate": True},
        workers=1,
        report=False,
    )
    res = r.summary["results"]
    assert res["attack_gate_threshold"] == pytest.approx(res["robust_threshold"])
    cases = json.loads((out / "cases.json").read_text())["cases"]
    assert {c["meta"]["robust_threshold"] for c in cases} == {res["attack_gate_threshold"]}
    means = case_means(_rows(out))
    for c in cases:
        assert c["meta"]["clean_dice"] == pytest.approx(means[(c["case_id"], "clean")])
    assert {x["gate_threshold"] for x in _rows(out)} == {res["attack_gate_threshold"]}


def test_gate_without_attacks_makes_no_clean_pass(msd_task, tmp_path):
    run_evaluation(
        msd_task,
        "msd-robust",
        tmp_path / "o",
        params={"model": TOY, "gate": True},
        workers=1,
        report=False,
    )
    cases = json.loads((tmp_path / "o" / "cases.json").read_text())["cases"]
    assert all("robust_threshold" not in c["meta"] for c in cases)


def test_configure_sets_min_max_and_lesion_mode_on_a_copy(tiny_dense_weights):
    from dataclasses import replace

    from napari_segeval.models.registry import load_dense

    model = load_dense(str(tiny_dense_weights), device="cpu")
    assert model.mr_minmax is None and model.postprocessing.lesion_mode == "remove"
    p = M.MsdParams(model="tiny", mr_minmax=True, lesion_mode="merge")
    m = M.configure(model, p)
    assert m.mr_minmax is True and m.postprocessing.lesion_mode == "merge"
    assert m.network is model.network and model.postprocessing.lesion_mode == "remove"
    assert M.configure(model, M.MsdParams(mr_minmax=None, lesion_mode=None)) is model
    declared = replace(model, mr_minmax=False)
    with pytest.raises(SegEvalError, match="plans say mr_minmax=False"):
        M.configure(declared, p)
    with pytest.raises(SegEvalError, match="lesion_mode must be one of None, remove, merge"):
        get_protocol("msd-robust").resolve_params({"lesion_mode": "fuse"})


def test_model_overrides_need_a_dense_model(msd_task, tmp_path):
    r = run_evaluation(
        msd_task,
        "msd-robust",
        tmp_path / "o",
        params={"model": TOY, "lesion_mode": "merge"},
        workers=1,
        report=False,
    )
    assert r.n_failed == 4 and "apply to dense models" in r.summary["failed"][0]["error"]


def test_apgd_dlr_is_skipped_on_two_class_models(msd_task, tmp_path):
    import torch

    from napari_segeval.models.dense import BUILTIN_PLANS
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    cfg = {"in_channels": 1, "num_classes": 2, "base_channels": 2, "levels": 2}
    plans = {
        **BUILTIN_PLANS,
        "config": cfg,
        "patch_size": [8, 16, 16],
        "spacing": None,
        "structures": {"1": "cube"},
        "organs": [1],
        "lesions": [],
    }
    path = tmp_path / "binary.pt"
    torch.save({**plans, "state_dict": UNet3D(UNetConfig(**cfg)).state_dict()}, path)
    r = run_evaluation(
        msd_task,
        "msd-robust",
        tmp_path / "o",
        params={"model": str(path), "attacks": [{"name": "apgd-dlr", "eps": 0.1}]},
        workers=1,
        report=False,
    )
    assert r.n_ok == 4, r.summary["failed"]
    assert {x["condition"] for x in _rows(tmp_path / "o")} == {"clean"}
    assert r.summary["results"]["skipped_attacks"] == [
        "apgd-dlr needs at least 3 classes (background included); the model has 2"
    ]


def test_rog_preset_resolves_to_their_recipe():
    params = get_protocol("msd-robust").resolve_params(preset="rog")
    assert params.gate is True and params.mr_minmax is True
    assert params.lesion_mode == "merge" and params.robust_factor == 0.5
    names = [a["name"] for a in params.attacks]
    assert names == ["apgd-ce", "pgd", "fab", "square", "apgd-dlr"]
    eps = 8 / 255
    for a in params.attacks:
        assert a["eps"] == eps and a["steps"] == 5 and a["reference"] == "labels"
        assert a["restarts"] == (1 if a["name"] == "square" else 5)
    by = {a["name"]: a for a in params.attacks}
    assert by["apgd-ce"]["step_size"] == by["apgd-dlr"]["step_size"] == 2 * eps
    assert by["apgd-ce"]["schedule"] == by["apgd-dlr"]["schedule"] == "rog"
    assert by["pgd"]["step_size"] == eps / 3 and by["pgd"]["select"] == "loss"
    assert (by["square"]["p_init"], by["square"]["loss"], by["square"]["schedule"]) == (
        0.8,
        "hard-dice",
        "absolute",
    )
    assert M.ROG_ATTACKS is M.ROG.params["attacks"]  # one list, one place


def _one_case_sample(tmp_path: Path) -> Path:
    """The sample task with its first case only, cropped to one model window."""
    return cropped_sample(tmp_path, 1)


def _cheap(attacks: list[dict]) -> list[dict]:
    """The preset's attacks with one step and one restart (FAB: one target class)."""
    return [
        {**a, "steps": 1, "restarts": 1, **({"target_ranks": 1} if a["name"] == "fab" else {})}
        for a in attacks
    ]


def _run_rog(task: Path, out: Path, attacks: list[dict], capsys, *extra: str) -> dict:
    from napari_segeval.cli import main

    code = main(
        [
            "evaluate",
            str(task),
            "--protocol",
            "msd-robust",
            "--preset",
            "rog",
            "--param",
            "device=cpu",
            "--param",
            f"attacks={json.dumps(attacks)}",
            *extra,
            "-o",
            str(out),
            "--workers",
            "1",
            "--json",
        ]
    )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary["failed"]
    return summary


@pytest.mark.slow
def test_rog_preset_runs_on_the_sample_task(tmp_path, capsys):
    """The preset's recipe (MR min-max, fusing, budget 8/255) on one sample case, one PGD step.

    Runs with the attack options every version of the attacks module has; the whole
    suite runs in :func:`test_rog_preset_runs_its_whole_suite_on_the_sample_task`.
    """
    task = _one_case_sample(tmp_path)
    attacks = [{"name": "pgd", "eps": M.ROG_EPS, "steps": 1}]
    s = _run_rog(task, tmp_path / "o", attacks, capsys, "--param", "gate=false")
    assert s["preset"] == "rog" and s["n_ok"] == 1
    assert s["differences_from_paper"] == list(M.ROG.differences)
    assert s["params"]["mr_minmax"] is True and s["params"]["lesion_mode"] == "merge"
    from napari_segeval.models.registry import load_dense

    std = load_dense("builtin-ct", device="cpu").intensity.std
    budget = s["results"]["budget"]["pgd-linf eps=0.0313725 steps=1"]
    assert budget["eps"] == M.ROG_EPS
    assert budget["eps_raw"]["eps_raw"]["mean"] == pytest.approx(M.ROG_EPS * std)  # HU
    assert "strictly greater than 0.5 x" in s["results"]["robust_rule"]
    page = (tmp_path / "o" / "report.html").read_text()
    assert "Preset <b>rog</b>" in page and "msd-robust-preset-rog" in page
    assert "strictly greater than 0.5 x the task&#x27;s mean clean Dice" in page
    assert "Attack budgets" in page and f"eps_raw: {M.ROG_EPS * std:.4g}" in page


def _suite_available() -> bool:
    from napari_segeval.attacks import ATTACKS, AttackConfig

    if not {"square", "fab"} <= set(ATTACKS):
        return False
    try:
        AttackConfig("apgd-ce", eps=0.1, schedule="rog", robust_threshold=0.1)
    except (TypeError, ValueError):
        return False
    return True


@pytest.mark.skipif(
    not _suite_available(), reason="the attacks module lacks Square/FAB/the ROG options"
)
@pytest.mark.slow
def test_rog_preset_runs_its_whole_suite_on_the_sample_task(tmp_path, capsys):
    task = _one_case_sample(tmp_path)
    attacks = _cheap(M.ROG_ATTACKS)
    s = _run_rog(task, tmp_path / "o", attacks, capsys)
    res = s["results"]
    assert res["attack_gate_threshold"] == pytest.approx(res["robust_threshold"])
    conds = {c for c in res["task_mean"] if c != "clean"}
    assert len(conds) == 5  # the built-in model has 6 classes: APGD-DLR runs
    for c in conds:
        assert res["budget"][c]["eps"] == M.ROG_EPS
        assert np.isfinite(res["task_mean"][c]) and c in res["robust_fraction"]


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ({"overlap": 2}, "parameter overlap must be in [0, 1), got 2"),
        ({"tolerance_mm": 0}, "parameter tolerance_mm must be a positive number of mm, got 0"),
        ({"empty": "maybe"}, "parameter empty must be one of one, nan, zero, got 'maybe'"),
    ],
)
def test_bad_window_and_scoring_parameters_are_one_line_before_any_case(
    msd_task, tmp_path, param, message
):
    with pytest.raises(SegEvalError) as err:
        run_evaluation(
            msd_task,
            "msd-robust",
            tmp_path / "o",
            params={"model": TOY, **param},
            workers=1,
            report=False,
        )
    assert str(err.value) == message
    assert not (tmp_path / "o").exists()


def test_every_prediction_gets_a_risk_per_structure_and_per_slice(msd_task, tmp_path):
    from napari_segeval.evaluation.triage import worklist

    out = tmp_path / "o"
    run_evaluation(msd_task, "msd-robust", out, params={"model": TOY, "attacks": SHIFT},
                   workers=1, report=True)  # fmt: skip
    rows = _rows(out)
    clean = [r for r in rows if r["condition"] == "clean"]
    assert clean and all(0.0 < float(r["risk"]) < 1.0 for r in clean)
    assert all("risk" not in r for r in rows if r["condition"] != "clean")  # nothing to read
    with open(out / "slices.csv", newline="") as fh:
        slices = list(csv.DictReader(fh))
    assert {s["condition"] for s in slices} == {"clean"}  # a module:function attack: no image
    assert all(s["tta"] == "" for s in slices)  # a backend, not a DenseModel: no tta passes
    assert {(s["case"], s["structure"]) for s in slices} == {
        (r["case"], r["structure"]) for r in clean
    }
    items = worklist(out)
    assert [w.risk for w in items] == sorted((w.risk for w in items), reverse=True)
    assert "<h2>Worklist</h2>" in (out / "report.html").read_text()


def test_without_labels_the_rows_carry_the_risk_and_no_score(msd_task, tmp_path):
    import shutil

    data = tmp_path / "Task99_NoLabels"
    shutil.copytree(msd_task, data)
    shutil.rmtree(data / "labelsTr")
    out = tmp_path / "o"
    res = run_evaluation(data, "msd-robust", out, params={"model": TOY}, workers=1)
    assert res.n_ok == 4 and res.n_failed == 0
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert all("dice" not in r or r["dice"] == "" for r in rows)
    assert all(0.0 < float(r["risk"]) < 1.0 for r in rows)
    assert "no reference labels" in (out / "report.html").read_text()


def test_risk_off_writes_no_risk_and_one_tta_pass_is_refused(msd_task, tmp_path):
    run_evaluation(msd_task, "msd-robust", tmp_path / "o", params={"model": TOY, "risk": False},
                   workers=1, report=False)  # fmt: skip
    assert "risk" not in _rows(tmp_path / "o")[0] and not (tmp_path / "o/slices.csv").exists()
    with pytest.raises(SegEvalError, match="parameter risk_tta must be 0 .no tta signal. or"):
        run_evaluation(msd_task, "msd-robust", tmp_path / "p",
                       params={"model": TOY, "risk_tta": 1}, workers=1)  # fmt: skip
