"""Paper presets: resolution order, recording in run.json/summary.json/report, resume, CLI."""

from __future__ import annotations

import json

import pytest
from _segeval_toy import TOY

from napari_segeval import SegEvalError
from napari_segeval.evaluation import get_protocol, run_evaluation
from napari_segeval.evaluation.protocols import REGISTRY


@pytest.fixture
def toy_protocol(monkeypatch):
    monkeypatch.setitem(REGISTRY, "toy-preset", "_segeval_toy")
    return get_protocol("toy-preset")


def test_defaults_then_preset_then_overrides(toy_protocol):
    p = toy_protocol
    assert p.resolve_params().overlap == 0.5
    assert p.resolve_params(preset="paper").overlap == 0.25
    both = p.resolve_params({"overlap": 0.75}, preset="paper")
    assert both.overlap == 0.75 and both.robust_factor == 0.4


def test_unknown_preset_and_bad_preset_parameter_are_refused(toy_protocol):
    with pytest.raises(SegEvalError, match="no preset 'nope' \\(presets: paper\\)"):
        toy_protocol.resolve_params(preset="nope")
    from dataclasses import replace

    from napari_segeval.evaluation.protocols import Preset

    broken = replace(toy_protocol, presets={"x": Preset("x", {"bogus": 1}, "nowhere")})
    with pytest.raises(SegEvalError, match="no parameter 'bogus' \\(preset x\\)"):
        broken.resolve_params(preset="x")


def test_every_registered_preset_resolves():
    for name in REGISTRY:
        proto = get_protocol(name)
        for preset in proto.presets:
            assert proto.presets[preset].name == preset
            proto.resolve_params(preset=preset)


def test_preset_is_recorded_and_reported(toy_protocol, msd_task, tmp_path):
    out = tmp_path / "out"
    run_evaluation(msd_task, "toy-preset", out, params={"model": TOY}, preset="paper", workers=1)
    run = json.loads((out / "run.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert run["preset"] == summary["preset"] == "paper"
    assert run["params"]["overlap"] == 0.25
    assert summary["differences_from_paper"] == [
        "The toy preset keeps one thing different, because tests need one."
    ]
    page = (out / "report.html").read_text()
    assert "Preset <b>paper</b>" in page and "A. Author et al. 2099" in page
    assert "because tests need one." in page and "toy-preset-preset-paper" in page


def test_defaults_report_their_own_differences(toy_protocol, msd_task, tmp_path):
    out = tmp_path / "out"
    run_evaluation(msd_task, "toy-preset", out, params={"model": TOY}, workers=1)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["preset"] is None
    assert summary["differences_from_paper"] == ["The defaults differ in everything."]
    assert "No preset" in (out / "report.html").read_text()


def test_resume_refuses_another_preset(toy_protocol, msd_task, tmp_path):
    out = tmp_path / "out"
    run_evaluation(msd_task, "toy-preset", out, params={"model": TOY}, workers=1, report=False)
    with pytest.raises(SegEvalError, match="preset none"):
        run_evaluation(
            msd_task,
            "toy-preset",
            out,
            params={"model": TOY},
            preset="paper",
            workers=1,
            report=False,
        )


def test_cli_preset_flag(toy_protocol, msd_task, tmp_path, capsys):
    from napari_segeval.cli import main

    out = tmp_path / "out"
    code = main(
        [
            "evaluate",
            str(msd_task),
            "--protocol",
            "toy-preset",
            "--preset",
            "paper",
            "--param",
            f"model={TOY}",
            "-o",
            str(out),
            "--workers",
            "1",
            "--json",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["preset"] == "paper"
    code = main(
        [
            "evaluate",
            str(msd_task),
            "--protocol",
            "toy-preset",
            "--preset",
            "nope",
            "-o",
            str(tmp_path / "o2"),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and "no preset 'nope'" in err and "Traceback" not in err


def test_a_module_protocol_declares_its_own_record(msd_task, tmp_path):
    """A ``module:ATTR`` protocol takes the same typed path as the registered ones: its
    record's defaults, rules and unknown names; cases in worker processes get the record."""
    proto = get_protocol("_segeval_toy:COUNTING")
    assert proto.resolve_params().to_json() == {"label": 1, "unit": "voxels"}
    with pytest.raises(SegEvalError, match="parameter unit must be one of voxels, ml, got 'l'"):
        proto.resolve_params({"unit": "l"})
    with pytest.raises(SegEvalError, match="no parameter 'labl' \\(parameters: label, unit\\)"):
        proto.resolve_params({"labl": 2})
    r = run_evaluation(
        msd_task, "_segeval_toy:COUNTING", tmp_path / "o", params={"label": 2}, workers=2
    )
    assert r.n_ok == 4 and r.summary["params"] == {"label": 2, "unit": "voxels"}
    assert r.summary["results"]["total"] > 0
