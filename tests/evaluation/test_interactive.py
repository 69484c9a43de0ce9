"""The ``interactive`` protocol: round 0 is medsam2-3d, rounds are replayable, attacks, summary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _small_sample import one_case_task

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation import run_evaluation
from napari_segeval.evaluation.curves import curve_area, interactive_curves, rounds_to_reach
from napari_segeval.evaluation.layouts import load_layout
from napari_segeval.evaluation.protocols.interactive import InteractiveParams, prompt_sets_at
from napari_segeval.evaluation.results import ResultsFolder
from napari_segeval.evaluation.store import load_records, result_rows

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"


def ok_rows(out: Path) -> list[dict]:
    _, records = load_records(out)
    return [r for r in result_rows(records) if r.get("status") == "ok"]


def island_task(root: Path) -> Path:
    """A bright structure whose slice 6 has a detached bright island (part of it): the
    threshold model's propagation misses the island, a positive click there finds it
    (with ``keep_largest=false``, which would drop the island again)."""
    labels = np.zeros((10, 32, 32), np.uint8)
    labels[2:8, 4:14, 4:14] = 1
    labels[6, 20:28, 20:28] = 1
    return one_case_task(root, labels)


#: The island is not connected to the main body: no largest-component step.
ISLAND = {"model": "threshold", "keep_largest": False}


def comparable(rows: list[dict]) -> list[dict]:
    return sorted(
        ({k: v for k, v in r.items() if k != "seconds"} for r in rows),
        key=lambda r: (r["case"], r["condition"], r["round"], r["label"]),
    )


@pytest.mark.slow
def test_sample_task_round0_is_medsam2_3d_and_runs_are_deterministic(tmp_path):
    specs = load_layout(SAMPLE)[:1]
    params = {"rounds": 1}
    a = run_evaluation(specs, "interactive", tmp_path / "a", params=params, workers=1, report=False)
    b = run_evaluation(
        specs,
        "interactive",
        tmp_path / "b",
        params=params,
        workers=1,
        report=False,
        save_predictions=False,
    )
    assert a.n_ok == b.n_ok == 1
    rows = ok_rows(tmp_path / "a")
    assert comparable(rows) == comparable(ok_rows(tmp_path / "b"))
    assert {r["round"] for r in rows} == {0, 1}
    base = run_evaluation(specs, "medsam2-3d", tmp_path / "m", workers=1, report=False)
    assert base.n_ok == 1
    ref = {r["structure"]: r for r in ok_rows(tmp_path / "m")}
    zero = {r["structure"]: r for r in rows if r["round"] == 0}
    assert set(zero) == set(ref) and len(ref) == 5
    for name, r in zero.items():
        assert (r["dice"], r["nsd"], r["box"]) == (
            ref[name]["dice"],
            ref[name]["nsd"],
            ref[name]["box"],
        )
    # the shipped built-in weights take clicks: point corrections (refine_prompt=auto)
    assert {r["refine_prompt"] for r in rows} == {"point"}
    added = [json.loads(r["prompt"]) for r in rows if r["round"] == 1]
    assert all(p == [] or p[0]["type"] == "point" for p in added)
    assert any(p for p in added)


def test_clicks_correct_the_missed_island_and_replay_exactly(tmp_path):
    from napari_segeval.evaluation.protocols._common import load_case, promptable_model
    from napari_segeval.io import read_labels
    from napari_segeval.propagation import PropagationOptions, PropagationSession

    task = island_task(tmp_path / "Task95")
    out = tmp_path / "o"
    r = run_evaluation(
        task, "interactive", out, params=dict(ISLAND, rounds=2, target_dice=0.99), workers=1
    )
    assert r.n_ok == 1, r.summary["failed"]
    rows = sorted(ok_rows(out), key=lambda x: x["round"])
    dice = [x["dice"] for x in rows]
    assert dice[0] < 0.95 and dice[1] == pytest.approx(1.0)
    first = json.loads(rows[1]["prompt"])
    assert first == [{"type": "point", "index": 6, "y": 23.0, "x": 23.0, "positive": True}]
    assert rows[2]["prompt"] == "[]"  # exact: nothing to correct
    # the prompts in the rows replay the saved prediction of every round
    spec = load_layout(task)[0]
    case = load_case(spec)
    model = promptable_model("threshold")
    _, records = load_records(out)
    files = records[0]["files"]
    for k in range(3):
        session = PropagationSession(
            model, model.preprocess(case.image, "CT"), PropagationOptions(keep_largest=False)
        )
        session.set_prompts(prompt_sets_at(rows, spec.case_id, round=k))
        key = "clean" if k == 0 else f"round{k}:clean"
        saved = read_labels(out / files[key])[0]
        assert np.array_equal(session.propagate().labels, saved)
    s = r.summary["results"]["conditions"]["clean"]
    assert [p["median"] for p in s["curve"]][1:] == [1.0, 1.0]
    assert s["noi"]["mean"] == 1 and s["reached"] == 1.0 and s["falls"] == 0.0
    html = (out / "report.html").read_text()
    assert "Dice against correction round" in html


def test_attack_rounds_run_on_the_attacked_image(tmp_path):
    from napari_segeval.evaluation.protocols._common import load_case
    from napari_segeval.prompts.correction import next_correction

    task = island_task(tmp_path / "Task95")
    out = tmp_path / "o"
    attack = {"name": "fgsm", "eps": 0.45}
    r = run_evaluation(
        task, "interactive", out, workers=1, params=dict(ISLAND, rounds=1, attacks=[attack])
    )
    assert r.n_ok == 1, r.summary["failed"]
    rows = ok_rows(out)
    cond = "fgsm-linf eps=0.45"
    assert {x["condition"] for x in rows} == {"clean", cond}
    by = {(x["condition"], x["round"]): x for x in rows}
    assert by[(cond, 0)]["dice"] < by[("clean", 0)]["dice"]  # the attack took something
    assert by[(cond, 0)]["eps_raw"] > 0
    # round 1 of the attacked condition corrects the attacked round-0 prediction
    _, records = load_records(out)
    files = records[0]["files"]
    from napari_segeval.io import read_labels

    attacked0 = read_labels(out / files[cond])[0]
    case = load_case(load_layout(task)[0])
    expected = next_correction(case.labels == 1, attacked0 == 1, label=1)
    added = json.loads(by[(cond, 1)]["prompt"])
    assert added == [
        {
            "type": "point",
            "index": expected.index,
            "y": expected.prompt.y,
            "x": expected.prompt.x,
            "positive": expected.prompt.positive,
        }
    ]
    assert f"perturbed:{cond}" in files and f"round1:{cond}" in files
    assert set(r.summary["results"]["conditions"]) == {"clean", cond}


def test_bad_parameters_are_one_line_before_any_case(tmp_path, capsys):
    task = island_task(tmp_path / "Task95")
    with pytest.raises(SegEvalError, match="parameter rounds must be a whole number >= 0, got -1"):
        run_evaluation(task, "interactive", tmp_path / "o", params={"rounds": -1}, workers=1)
    with pytest.raises(SegEvalError, match="refine_prompt must be one of auto, point, box"):
        InteractiveParams(refine_prompt="scribble").check()
    from napari_segeval.cli import main

    code = main(
        [
            "evaluate",
            str(task),
            "--protocol",
            "interactive",
            "-o",
            str(tmp_path / "c"),
            "--param",
            "refine_prompt=lasso",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and err == [
        (
            "segeval evaluate: error: parameter refine_prompt must be one "
            "of auto, point, box, got 'lasso'"
        )
    ]


def test_point_corrections_need_a_model_that_takes_points(tmp_path):
    import torch

    from napari_segeval.models._prompt_net import PromptUNet
    from napari_segeval.models.builtin_prompt import save_weights

    torch.manual_seed(0)  # built-in weights of four input channels: boxes, no clicks
    weights = tmp_path / "box_only.pt"
    save_weights(
        PromptUNet(width=4, depth=2, in_channels=4).eval(),
        weights,
        {"width": 4, "depth": 2, "size": 16, "in_channels": 4},
    )
    task = island_task(tmp_path / "Task95")
    r = run_evaluation(
        task,
        "interactive",
        tmp_path / "o",
        workers=1,
        report=False,
        params={"refine_prompt": "point", "model": f"builtin:{weights}"},
    )
    assert r.n_failed == 1
    assert "does not take points: use --param refine_prompt=box" in r.summary["failed"][0]["error"]


def test_curve_numbers_known_answers():
    assert curve_area([0.0, 1.0]) == 0.5 and curve_area([0.8, 0.9, 1.0]) == pytest.approx(0.9)
    assert rounds_to_reach([0.9]) == 0 and rounds_to_reach([0.1, 0.2, 0.3]) == 3
    rows = [
        {"case": c, "structure": "s", "condition": "clean", "round": k, "dice": d}
        for c, ds in (
            ("a", (0.80, 0.85, 0.95)),
            ("b", (0.95, 0.90, 0.97)),
            ("c", (0.20, 0.30, 0.40)),
        )
        for k, d in enumerate(ds)
    ]
    s = interactive_curves(rows, 2)["conditions"]["clean"]
    assert [p["median"] for p in s["curve"]] == [0.80, 0.85, 0.95]
    assert s["noi"] == {"mean": (2 + 0 + 3) / 3, "median": 2.0, "cap": 3}
    assert s["reached"] == pytest.approx(2 / 3) and s["falls"] == pytest.approx(1 / 3)
    assert s["falls_per_round"] == [pytest.approx(1 / 3), 0.0]  # b falls in round 1 only
    assert s["auc"]["median"] == pytest.approx((0.825 + 0.9) / 2)


def test_cli_prints_the_round_table_and_one_json_object(tmp_path, capsys):
    from napari_segeval.cli import main

    task = island_task(tmp_path / "Task95")
    args = [
        "evaluate",
        str(task),
        "--protocol",
        "interactive",
        "--no-progress",
        "--param",
        "model=threshold",
        "--param",
        "keep_largest=false",
        "--param",
        "rounds=1",
        "--no-report",
    ]
    assert main([*args, "-o", str(tmp_path / "t")]) == 0
    text = capsys.readouterr().out
    assert "condition  round  n  median dice" in text and "noi mean" in text
    assert main([*args, "-o", str(tmp_path / "j"), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    curve = obj["results"]["conditions"]["clean"]["curve"]
    assert [p["round"] for p in curve] == [0, 1] and curve[1]["median"] == 1.0


def test_video_mode_round0_is_medsam2_video(tmp_path):
    from napari_segeval.io import Geometry, write_image, write_labels

    folder = tmp_path / "echo" / "patient0001"
    folder.mkdir(parents=True)
    labels = np.zeros((6, 20, 20), np.uint8)
    for t in range(6):
        labels[t, 4 + t // 2 : 12 + t // 2, 5:12] = 1
    labels[3, 15:19, 1:5] = 1  # a part only frame 3 shows
    image = np.where(labels > 0, 220, 20).astype(np.uint8)
    write_image(folder / "patient0001_2CH_half_sequence.mhd", image, Geometry.identity(3))
    write_labels(folder / "patient0001_2CH_half_sequence_gt.mhd", labels, Geometry.identity(3))
    opts = {"camus_mode": "sequences"}
    params = {"model": "threshold", "keep_largest": False}
    base = run_evaluation(
        tmp_path / "echo",
        "medsam2-video",
        tmp_path / "v",
        params=params,
        layout_options=opts,
        workers=1,
        report=False,
    )
    r = run_evaluation(
        tmp_path / "echo",
        "interactive",
        tmp_path / "i",
        layout_options=opts,
        params={**params, "mode": "video", "rounds": 1},
        workers=1,
        report=False,
    )
    assert base.n_ok == r.n_ok == 1, r.summary["failed"]
    rows = {x["round"]: x for x in ok_rows(tmp_path / "i")}
    (ref,) = ok_rows(tmp_path / "v")
    assert rows[0]["dice"] == ref["dice"] < 1.0 and rows[0]["key_slice"] == 0
    assert json.loads(rows[1]["prompt"])[0]["index"] == 3 and rows[1]["dice"] == 1.0
    assert rows[1]["prompt_text"].endswith("on frame 3") and rows[0]["nsd"] is None
    folder = ResultsFolder(tmp_path / "i")
    assert folder.rounds(folder.cases()[0], 1)[1].change == rows[1]["prompt_text"]


def test_several_models_start_from_the_same_prompts_and_correct_their_own(tmp_path, capsys):
    from napari_segeval.cli import main

    task = island_task(tmp_path / "Task95")
    models = ["threshold", "builtin"]
    out = tmp_path / "both"
    common = ["--param", "keep_largest=false", "--param", "rounds=1", "--no-progress"]
    assert (
        main(
            [
                "evaluate",
                str(task),
                "--protocol",
                "interactive",
                "-o",
                str(out),
                "--model",
                "threshold",
                "--model",
                "builtin",
                *common,
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert text.count("condition  round  n  median dice") == 2
    assert "model threshold:" in text and "model builtin:" in text
    rows = ok_rows(out)
    assert list(dict.fromkeys(r["model"] for r in rows)) == models
    first = {
        m: [(r["structure"], r["prompt"]) for r in rows if r["model"] == m and r["round"] == 0]
        for m in models
    }
    assert first["threshold"] == first["builtin"] and first["builtin"]
    for m in models:  # each model's rows are the rows of its run alone
        run_evaluation(
            task,
            "interactive",
            tmp_path / m,
            workers=1,
            report=False,
            params={"model": m, "keep_largest": False, "rounds": 1},
        )
        assert comparable([r for r in rows if r["model"] == m]) == comparable(ok_rows(tmp_path / m))
    record = load_records(out)[1][0]
    assert {"clean @ threshold", "round1:clean @ threshold", "round1:clean @ builtin"} <= set(
        record["files"]
    )
    summary = json.loads((out / "summary.json").read_text())["results"]
    assert set(summary["by_model"]) == set(models)
    assert summary["by_model"]["threshold"]["conditions"]["clean"]["curve"][1]["median"] == 1.0
    # the comparison is of round 0 and the last round, not of every round pooled
    conds = {t["condition"] for t in summary["comparison"]["dice"]}
    assert conds == {"clean", "clean round 1"}
    report = (out / "report.html").read_text()
    assert "Dice against correction round" in report
    assert "clean @ threshold" in report and "clean @ builtin" in report
    assert "Models compared per structure" in report
    assert "clean @ builtin r1</a>" in report  # the per-case link to the last round


@pytest.mark.parametrize("choice", ["risk", "random"])
def test_without_the_oracle_a_person_looks_where_the_risk_says(tmp_path, choice):
    """``slice_choice=risk|random``: each round looks at up to LOOKS_PER_ROUND slices the
    structure's risk describes and corrects the first wrong one; ``random`` is
    reproducible."""
    from napari_segeval.evaluation.protocols.interactive import review_order
    from napari_segeval.propagation.result import StructureResult

    task = island_task(tmp_path / "Task95")
    labels = np.zeros((10, 32, 32), bool)
    labels[2:8, 4:14, 4:14] = True
    runs = []
    for name in ("a", "b"):
        params = {**ISLAND, "rounds": 2, "slice_choice": choice}
        r = run_evaluation(task, "interactive", tmp_path / name, params=params, report=False)
        assert r.n_ok == 1
        runs.append(comparable(ok_rows(tmp_path / name)))
    assert runs[0] == runs[1]
    for row in runs[0]:
        for p in json.loads(row["prompt"]) if row["round"] else []:
            assert 2 <= p["index"] <= 7  # on the predicted organ (or the slice after it)
    m = np.zeros((4, 6, 6), bool)
    s = StructureResult(1, (0, 0, 0), m * 0.9, m, m.shape)
    assert review_order(choice, s, m) == []  # nothing predicted, nothing to look at
    with pytest.raises(SegEvalError, match="slice_choice must be one of oracle, risk, random"):
        InteractiveParams(slice_choice="worst").check()
