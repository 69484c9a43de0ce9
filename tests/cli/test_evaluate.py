"""``segeval evaluate`` and ``segeval report`` (parsers built here; the lead registers them)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "evaluation"))

from _segeval_toy import TOY, write_msd

from napari_segeval._errors import SegEvalError
from napari_segeval.cli import _evaluate, _report


def call(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    _evaluate.add_parser(sub)
    _report.add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def test_evaluate_then_report(tmp_path, capsys):
    task = write_msd(tmp_path / "Task95", 3)
    out = tmp_path / "out"
    rc = call(
        [
            "evaluate",
            str(task),
            "--protocol",
            "msd-robust",
            "-o",
            str(out),
            "--param",
            f"model={TOY}",
            "--attack",
            "_segeval_toy:shift_attack:shift=2",
            "--json",
        ]
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_ok"] == 3 and summary["params"]["attacks"] == [
        {"name": "_segeval_toy:shift_attack", "shift": 2}
    ]
    (out / "report.html").unlink()
    (out / "results.csv").unlink()
    assert call(["report", str(out)]) == 0
    assert "3 cases, 3 ok" in capsys.readouterr().out
    assert (out / "report.html").is_file() and (out / "results.csv").is_file()
    rc = call(
        [
            "evaluate",
            str(task),
            "--protocol",
            "msd-robust",
            "-o",
            str(out),
            "--param",
            f"model={TOY}",
            "--attack",
            "_segeval_toy:shift_attack:shift=2",
            "--no-progress",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "(3 resumed)" in text and "mean dice" in text


def test_failures_give_exit_code_3(tmp_path, capsys):
    task = write_msd(
        tmp_path / "Task94",
        2,
        extra_training=[{"image": "./imagesTr/gone.nii.gz", "label": "./labelsTr/gone.nii.gz"}],
    )
    rc = call(
        [
            "evaluate",
            str(task),
            "--protocol",
            "msd-robust",
            "-o",
            str(tmp_path / "o"),
            "--param",
            f"model={TOY}",
            "--no-progress",
            "--no-report",
        ]
    )
    text = capsys.readouterr().out
    assert rc == 3 and "1 failed" in text and "failed: gone:" in text


def test_bad_arguments(tmp_path):
    with pytest.raises(SegEvalError, match="KEY=VALUE"):
        _evaluate.parse_params(["oops"])
    with pytest.raises(SegEvalError, match="no parameter 'bogus'"):
        call(
            [
                "evaluate",
                str(write_msd(tmp_path / "T", 1)),
                "--protocol",
                "msd-robust",
                "-o",
                str(tmp_path / "o"),
                "--param",
                "bogus=1",
            ]
        )
    with pytest.raises(SegEvalError, match="not a results folder"):
        call(["report", str(tmp_path)])
    assert _evaluate.parse_attack("pgd-linf:eps=0.03,steps=5") == {
        "name": "pgd-linf",
        "eps": 0.03,
        "steps": 5,
    }
    for text in ("pgd:=3", "pgd:eps=0.1,steps"):  # an option without a key or an "="
        with pytest.raises(SegEvalError, match="--attack option .* needs K=V"):
            _evaluate.parse_attack(text)


@pytest.mark.parametrize("where", ["a_file", "a_file/sub"])
def test_output_dir_that_cannot_be_made_is_one_line(tmp_path, capsys, where):
    from napari_segeval.cli import main

    task = write_msd(tmp_path / "T", 1)
    (tmp_path / "a_file").write_text("x")
    rc = main(
        [
            "evaluate",
            str(task),
            "--protocol",
            "msd-robust",
            "-o",
            str(tmp_path / where),
            "--param",
            f"model={TOY}",
            "--no-progress",
            "--json",
        ]
    )
    captured = capsys.readouterr()
    reason = "File exists" if where == "a_file" else "Not a directory"
    assert rc == 2 and captured.out == ""
    assert captured.err == (
        f"segeval evaluate: error: {tmp_path / where}: cannot create the "
        f"results folder ({reason})\n"
    )
    assert (tmp_path / "a_file").read_text() == "x"


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("bad", "missing port number in address 'bad'"),
        ("tcp://127.0.0.1:1", None),  # Dask's words depend on timing (timed out, refused ...)
    ],
)
def test_scheduler_that_cannot_be_reached_is_one_line(tmp_path, capsys, address, reason):
    pytest.importorskip("distributed")
    import dask

    from napari_segeval.cli import main

    task = write_msd(tmp_path / "T", 1)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        rc = main(
            [
                "evaluate",
                str(task),
                "--protocol",
                "msd-robust",
                "-o",
                str(tmp_path / "o"),
                "--param",
                f"model={TOY}",
                "--scheduler",
                address,
                "--no-progress",
                "--json",
            ]
        )
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    head = f"segeval evaluate: error: Dask scheduler {address}: cannot connect ("
    assert captured.err.startswith(head) and captured.err.endswith(")\n")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    if reason is not None:
        assert captured.err == f"{head}{reason})\n"


@pytest.mark.parametrize(
    ("run_json", "what"),
    [
        ('{"x": 1}', "no 'protocol'"),
        ('{"protocol": "msd-robust"}', "no 'params'"),
        ("[]", "not a JSON object"),
    ],
)
def test_report_of_a_broken_run_record_is_one_line(tmp_path, capsys, run_json, what):
    from napari_segeval.cli import main

    task = write_msd(tmp_path / "T", 1)
    out = tmp_path / "o"
    assert (
        main(
            [
                "evaluate",
                str(task),
                "--protocol",
                "msd-robust",
                "-o",
                str(out),
                "--param",
                f"model={TOY}",
                "--no-progress",
                "--no-report",
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    (out / "run.json").write_text(run_json)
    rc = main(["report", str(out), "--json"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err == (
        f"segeval report: error: {out / 'run.json'}: not a results record ({what})\n"
    )


@pytest.mark.parametrize("precision", ["bf16", "openvino"])
def test_a_precision_the_model_cannot_run_is_one_line_before_anything_runs(
    tmp_path, capsys, precision
):
    """Every precision the command offers reaches the model's own refusal."""
    from napari_segeval.cli import main

    task = write_msd(tmp_path / "T", 1)
    out = tmp_path / "o"
    rc = main(
        [
            "evaluate",
            str(task),
            "--protocol",
            "medsam2-3d",
            "--model",
            "threshold",
            "--precision",
            precision,
            "-o",
            str(out),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    assert err == (
        f"segeval evaluate: error: --precision {precision}: threshold runs in fp32 only; "
        "--precision auto chooses fp32\n"
    )


def test_run_json_says_which_precision_auto_chose(tmp_path):
    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.evaluation.layouts import CaseSpec
    from napari_segeval.evaluation.protocols._promptable import Medsam2Params

    assert Medsam2Params(models=["threshold", "builtin"]).precisions() == {
        "threshold": "fp32",
        "builtin": "fp32",
    }
    bad = [CaseSpec("broken", ("/missing.nii.gz",), "/missing_seg.nii.gz")]
    params = {"model": "threshold", "device": "cpu"}
    run_evaluation(bad, "medsam2-3d", tmp_path, params=params, workers=1, report=False)
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["params"]["precision"] == "auto" and run["precision"] == {"threshold": "fp32"}


def test_the_parser_names_every_protocol_and_layout():
    """The CLI spells the names out (no evaluation import at start); they stay the registry's."""
    from napari_segeval.cli._uncertainty import LAYOUT_NAMES
    from napari_segeval.evaluation.layouts import LAYOUTS
    from napari_segeval.evaluation.protocols import REGISTRY

    assert tuple(REGISTRY) == _evaluate.PROTOCOL_NAMES
    assert _evaluate.LAYOUT_NAMES == LAYOUTS == LAYOUT_NAMES
