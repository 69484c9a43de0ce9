"""Browsing an interactive run's rounds: keys, rounds of a case, the results folder's rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_interactive import ISLAND, island_task  # noqa: I001 - the test folder's module

from napari_segeval.evaluation import run_evaluation
from napari_segeval.evaluation.curves import case_rounds
from napari_segeval.evaluation.keys import PredictionKey
from napari_segeval.evaluation.protocols import run_has_rounds
from napari_segeval.evaluation.protocols.interactive import prompt_sets_at
from napari_segeval.evaluation.results import ResultsFolder
from napari_segeval.evaluation.store import load_records, result_rows
from napari_segeval.io import read_labels


@pytest.mark.parametrize(
    "condition,k,model",
    [
        ("clean", 0, None),
        ("clean", 3, None),
        ("fgsm-linf eps=0.5", 2, None),
        ("clean", 0, "builtin"),
        ("pgd", 5, "b:x.pt"),
    ],
)
def test_round_keys_read_back(condition, k, model):
    key = PredictionKey.parse(str(PredictionKey(condition, k, model)))
    assert (key.condition, key.round or 0, key.model) == (condition, k, model)
    base = condition if model is None else f"{condition} @ {model}"
    assert str(key.first_round()) == base


@pytest.fixture(scope="module")
def island_run(tmp_path_factory):
    """interactive, threshold model, the island task, 2 rounds (read it only)."""
    root = tmp_path_factory.mktemp("rounds")
    out = root / "run"
    r = run_evaluation(
        island_task(root / "Task95"),
        "interactive",
        out,
        workers=1,
        report=False,
        params={**ISLAND, "rounds": 2},
    )
    assert r.n_ok == 1
    return out


def test_a_video_round_names_its_frame():
    rows = [
        {
            "case": "a",
            "condition": "clean",
            "label": 1,
            "round": r,
            "dice": 0.5,
            "prompt": '[{"type":"point","index":3,"y":2,"x":2,"positive":true}]',
        }
        for r in (0, 1)
    ]
    assert case_rounds(rows, "a", 1)[1].change == "+ point (y=2, x=2) on slice 3"
    assert case_rounds(rows, "a", 1, where="frame")[1].change == "+ point (y=2, x=2) on frame 3"


def test_case_rounds_are_the_rows_of_each_round(island_run):
    rows = result_rows(load_records(island_run)[1])
    assert ResultsFolder(island_run).has_rounds and run_has_rounds({"protocol": "interactive"})
    rounds = case_rounds(rows, "isl", 1)
    assert [r.round for r in rounds] == [0, 1, 2]
    assert [str(r.key) for r in rounds] == ["clean", "round1:clean", "round2:clean"]
    by_round = {int(r["round"]): r for r in rows}
    assert [r.dice for r in rounds] == [by_round[k]["dice"] for k in range(3)]
    assert rounds[0].dice < rounds[1].dice == 1.0  # the click finds the island
    assert rounds[2].added == () and rounds[2].change == "none"  # exact: no prompt
    assert rounds[1].added[0].positive and rounds[1].added[0].index == 6
    for r in rounds:  # every prompt so far: what replays the round
        assert r.prompts == prompt_sets_at(rows, "isl", round=r.round)[1].prompts
    assert case_rounds(rows, "isl", 2) == [] and case_rounds(rows, "other", 1) == []


def test_results_folder_rows_name_each_rounds_prediction(island_run):
    folder = ResultsFolder(island_run)
    rows = folder.rows()
    assert [(r["round"], r["condition"], str(r["key"])) for r in rows] == [
        (0, "clean", "clean"),
        (1, "clean", "round1:clean"),
        (2, "clean", "round2:clean"),
    ]
    assert all(math.isnan(r["delta_dice"]) for r in rows)  # all clean, of their own round
    files = folder.records["isl"]["files"]
    assert all(str(r["key"]) in files for r in rows)
    assert [r.key for r in folder.rounds("isl", 1)] == [r["key"] for r in rows]
    loaded = folder.load("isl", "round2:clean")
    assert loaded.pair == ("clean", "round2:clean")
    saved = read_labels(island_run / files["round2:clean"])[0]
    assert np.array_equal(loaded.predictions["round2:clean"], saved)


def test_rows_of_other_protocols_have_no_round(island_run, tmp_path):
    from test_interactive import SAMPLE

    from napari_segeval.evaluation.layouts import load_layout

    out = tmp_path / "m"
    run_evaluation(
        load_layout(SAMPLE)[:1],
        "medsam2-3d",
        out,
        params={"model": "threshold"},
        workers=1,
        report=False,
    )
    folder = ResultsFolder(out)
    assert {r["round"] for r in folder.rows()} == {None}
    assert not folder.has_rounds and not run_has_rounds(folder.run, folder.raw_rows())
    assert folder.rounds(folder.cases()[0], 1) == []
    assert folder.rows()[0]["condition"] == "clean"


def test_rounds_of_each_model_in_a_run_of_several(tmp_path):
    out = tmp_path / "both"
    r = run_evaluation(
        island_task(tmp_path / "Task95"),
        "interactive",
        out,
        workers=1,
        report=False,
        params={"keep_largest": False, "rounds": 1, "models": ["threshold", "builtin"]},
    )
    assert r.n_ok == 1
    folder = ResultsFolder(out)
    files = folder.records["isl"]["files"]
    conditions = [str(x["key"]) for x in folder.rows()]
    assert conditions == [
        "clean @ threshold",
        "round1:clean @ threshold",
        "clean @ builtin",
        "round1:clean @ builtin",
    ]
    assert all(c in files for c in conditions)
    for model in ("threshold", "builtin"):
        rounds = folder.rounds("isl", 1, "clean", model)
        assert [str(x.key) for x in rounds] == [c for c in conditions if c.endswith(model)]
    mine = folder.rounds("isl", 1, "clean", "threshold")
    assert mine[1].dice == 1.0 and mine[1].added[0].index == 6
    loaded = folder.load("isl", "round1:clean @ builtin")
    assert loaded.pair == ("clean @ builtin", "round1:clean @ builtin")


def test_an_attacked_round_opens_with_its_attack_s_perturbed_image(tmp_path):
    from napari_segeval.io import read_image

    out = tmp_path / "o"
    r = run_evaluation(
        island_task(tmp_path / "Task95"),
        "interactive",
        out,
        workers=1,
        report=False,
        params={**ISLAND, "rounds": 1, "attacks": [{"name": "fgsm", "eps": 0.45}]},
    )
    assert r.n_ok == 1, r.summary["failed"]
    cond = "fgsm-linf eps=0.45"
    folder = ResultsFolder(out)
    rows = {(str(x["key"]), x["round"]): x for x in folder.rows()}
    attacked = rows[(f"round1:{cond}", 1)]
    assert attacked["delta_dice"] == pytest.approx(
        attacked["dice"] - rows[("round1:clean", 1)]["dice"]
    )  # against clean of its round
    files = folder.records["isl"]["files"]
    loaded = folder.load("isl", f"round1:{cond}")
    assert loaded.pair == ("clean", f"round1:{cond}")
    perturbed = read_image(out / files[f"perturbed:{cond}"]).image
    np.testing.assert_allclose(loaded.perturbed, perturbed, rtol=0, atol=1e-3)
    assert loaded.files[f"perturbation:{cond}"].endswith(files[f"perturbation:{cond}"])
