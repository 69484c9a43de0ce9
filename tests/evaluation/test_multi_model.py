"""Several models in one evaluation run: the same prompts, per-model rows, summary and report."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pytest
from _segeval_toy import TOY, write_msd

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation import run_evaluation
from napari_segeval.evaluation.layouts import load_layout
from napari_segeval.evaluation.protocols import get_protocol, prediction_key
from napari_segeval.evaluation.store import load_records, result_rows

TASK = Path(__file__).resolve().parents[2] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"


def _ok_rows(out: Path) -> list[dict]:
    return [r for r in result_rows(load_records(out)[1]) if r.get("status") == "ok"]


def _same(a: dict, b: dict) -> bool:  # NaN equals NaN here
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.fixture(scope="module")
def two_models(tmp_path_factory) -> tuple[Path, list]:
    """builtin and threshold on the first case of the sample task (made once: read it only)."""
    specs = load_layout(TASK)[:1]
    out = tmp_path_factory.mktemp("multi") / "run"
    run_evaluation(specs, "medsam2-3d", out, params={"models": ["builtin", "threshold"]}, workers=1)
    return out, specs


def test_every_model_on_the_same_prompts(two_models):
    out, _ = two_models
    rows = _ok_rows(out)
    assert [r["model"] for r in rows] == ["builtin"] * 5 + ["threshold"] * 5
    prompts = {
        m: {(r["structure"], r["key_slice"], r["box"]) for r in rows if r["model"] == m}
        for m in ("builtin", "threshold")
    }
    assert prompts["builtin"] == prompts["threshold"] and len(prompts["builtin"]) == 5
    assert {r["condition"] for r in rows} == {"clean"}
    record = load_records(out)[1][0]
    assert set(record["files"]) == {"clean @ builtin", "clean @ threshold"}
    assert all((out / p).is_file() for p in record["files"].values())


def _without_risk(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "risk"}


def test_model_rows_equal_the_run_of_that_model_alone(two_models, tmp_path):
    """Every column but the risk, which reads the other models' masks (``models``)."""
    out, specs = two_models
    rows = _ok_rows(out)
    for model in ("builtin", "threshold"):
        alone = tmp_path / model
        run_evaluation(specs, "medsam2-3d", alone, params={"model": model}, workers=1, report=False)
        single = _ok_rows(alone)
        mine = [r for r in rows if r["model"] == model]
        assert len(single) == len(mine) == 5
        assert all(
            _same(_without_risk(a), _without_risk(b)) for a, b in zip(single, mine, strict=True)
        )
        assert all(0.0 <= r["risk"] <= 1.0 for r in single + mine)
        assert json.loads(single[0]["params"])["model"] == model
    assert set(load_records(tmp_path / "builtin")[1][0]["files"]) == {"clean"}


def test_summary_and_report_show_each_model(two_models):
    out, _ = two_models
    summary = json.loads((out / "summary.json").read_text())
    res = summary["results"]
    assert summary["params"]["models"] == ["builtin", "threshold"]
    assert summary["params"]["model"] is None
    assert set(res["by_model"]) == {"builtin", "threshold"}
    assert res["comparison"]["models"] == ["builtin", "threshold"]
    dice = {(t["structure"], t["model"]): t for t in res["comparison"]["dice"]}
    assert len(dice) == 10 and all(t["condition"] == "clean" for t in dice.values())
    liver = [r for r in _ok_rows(out) if r["structure"] == "liver" and r["model"] == "threshold"]
    assert math.isclose(dice[("liver", "threshold")]["median"], liver[0]["dice"])
    assert dice[("liver", "builtin")]["median"] > dice[("liver", "threshold")]["median"]
    page = (out / "report.html").read_text()
    assert "Models compared per structure" in page and "DSC per structure and model" in page
    for name in ("clean @ builtin", "clean @ threshold"):
        assert f"dice {name}" in page


def _short_case(root: Path, slices: slice = slice(14, 18)) -> list:
    """The sample task's first case cut to a few slices (MedSAM2 on the CPU stays short)."""
    from napari_segeval.io import read_case, write_image, write_labels

    case = read_case(TASK / "imagesTr" / "abd_001.nii.gz", TASK / "labelsTr" / "abd_001.nii.gz")
    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    write_image(root / "imagesTr" / "abd_001.nii.gz", case.image[slices], case.geometry)
    write_labels(root / "labelsTr" / "abd_001.nii.gz", case.labels[slices], case.geometry)
    ds = json.loads((TASK / "dataset.json").read_text())
    ds["training"] = [e for e in ds["training"] if "abd_001" in e["image"]]
    ds["numTraining"] = 1
    (root / "dataset.json").write_text(json.dumps(ds))
    return load_layout(root)


@pytest.mark.slow
@pytest.mark.medsam2
def test_medsam2_beside_the_others(tmp_path):
    """MedSAM2's network (at 128 px, by its factory: a sixteenth of the 512 px cost)."""
    pytest.importorskip("sam2")
    pytest.importorskip("hydra")
    models = ["builtin", "threshold", "_segeval_toy:medsam2_small"]
    out = tmp_path / "run"
    specs = _short_case(tmp_path / "Task90_short")
    r = run_evaluation(specs, "medsam2-3d", out, params={"models": models}, workers=1)
    assert r.n_ok == 1, r.summary["failed"]
    rows = _ok_rows(out)
    assert list(dict.fromkeys(row["model"] for row in rows)) == models
    boxes = {m: [(x["structure"], x["box"]) for x in rows if x["model"] == m] for m in models}
    assert boxes[models[0]] == boxes[models[1]] == boxes[models[2]]
    assert set(r.summary["results"]["by_model"]) == set(models)
    page = (out / "report.html").read_text()
    assert all(html.escape(prediction_key("clean", m)) in page for m in models)


def test_attacks_run_per_model(tmp_path):
    task = write_msd(tmp_path / "Task93", 1)
    models = [TOY, "_segeval_toy:failing_dense"]  # the same toy network under two names
    out = tmp_path / "run"
    r = run_evaluation(
        task,
        "msd-robust",
        out,
        workers=1,
        params={"models": models, "attacks": [{"name": "_segeval_toy:shift_attack", "shift": 2}]},
    )
    assert r.n_ok == 1, r.summary["failed"]
    rows = _ok_rows(out)
    conds = {(x["model"], x["condition"]) for x in rows}
    assert conds == {(m, c) for m in models for c in ("clean", "_segeval_toy:shift_attack shift=2")}
    assert set(r.summary["results"]["by_model"]) == set(models)
    assert "robust_fraction" in r.summary["results"]["by_model"][TOY]
    files = load_records(out)[1][0]["files"]
    assert {prediction_key("clean", m) for m in models} <= set(files)
    page = (out / "report.html").read_text()
    assert "Robust fraction" in page and '<th class="t">model</th>' in page


@pytest.mark.parametrize(
    ("models", "match"),
    [
        (["builtin", "medsam"], r"unknown promptable model 'medsam' \(closest: medsam2"),
        (["builtin", "builtin-ct"], "'builtin-ct' is a dense model; protocol medsam2-3d"),
        (["builtin", "threshold", "builtin"], "'builtin' is given twice"),
    ],
)
def test_bad_models_are_one_line(models, match):
    with pytest.raises(SegEvalError, match=match) as err:
        get_protocol("medsam2-3d").resolve_params({"models": models})
    assert "\n" not in str(err.value)


def test_protocols_of_one_model_refuse_several():
    with pytest.raises(SegEvalError, match="protocol cv5-2d evaluates one model"):
        get_protocol("cv5-2d").resolve_params({"models": ["a", "b"]})
    with pytest.raises(SegEvalError, match="model='threshold' and models"):
        get_protocol("medsam2-3d").resolve_params(
            {"model": "threshold", "models": ["builtin", "threshold"]}
        )
    with pytest.raises(SegEvalError, match="'builtin' is a promptable model"):
        get_protocol("msd-robust").resolve_params({"models": ["builtin-ct", "builtin"]})
    one = get_protocol("medsam2-3d").resolve_params({"models": ["threshold"]})
    assert one.model == "threshold" and one.models is None
