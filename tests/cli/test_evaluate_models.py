"""``segeval evaluate --model A --model B``: several models in one run, and their bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "evaluation"))

from _segeval_toy import TOY, write_msd

from napari_segeval.cli import main

TWO = ["--model", TOY, "--model", "_segeval_toy:failing_dense"]


def test_two_models_print_a_table_each(tmp_path, capsys):
    task = write_msd(tmp_path / "Task92", 2)
    args = [
        "evaluate",
        str(task),
        "--protocol",
        "msd-robust",
        "-o",
        str(tmp_path / "o"),
        "--workers",
        "1",
        "--no-progress",
        *TWO,
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"model {TOY}:" in text and "model _segeval_toy:failing_dense:" in text
    assert text.count("mean dice") == 2
    assert main([*args, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)  # exactly one object
    assert summary["params"]["models"] == [TOY, "_segeval_toy:failing_dense"]
    assert set(summary["results"]["by_model"]) == set(summary["params"]["models"])


def test_one_model_is_the_model_parameter(tmp_path, capsys):
    task = write_msd(tmp_path / "Task91", 1)
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
                "--workers",
                "1",
                "--no-progress",
                "--no-report",
                "--model",
                TOY,
                "--param",
                f"model={TOY}",
                "--json",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["params"]["model"] == TOY and summary["params"]["models"] is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--model", "builtin", "--model", "medsam"],
            "unknown promptable model 'medsam' (closest: ",
        ),
        (["--model", "builtin", "--model", "builtin-ct"], "'builtin-ct' is a dense model"),
        (["--model", "builtin", "--model", "builtin"], "'builtin' is given twice"),
        (["--model", "medsam"], "unknown promptable model 'medsam' (closest: "),  # one model too
        (["--model", "builtin-ct"], "'builtin-ct' is a dense model; protocol medsam2-3d"),
        (["--param", "model=builtin-ct"], "'builtin-ct' is a dense model; protocol medsam2-3d"),
        (
            ["--model", "builtin", "--model", "threshold", "--param", "model=builtin"],
            "--param model=builtin and --model builtin --model threshold disagree",
        ),
    ],
)
def test_bad_models_are_one_line(tmp_path, capsys, extra, message):
    task = write_msd(tmp_path / "Task90", 1)
    rc = main(
        [
            "evaluate",
            str(task),
            "--protocol",
            "medsam2-3d",
            "-o",
            str(tmp_path / "o"),
            "--no-progress",
            *extra,
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc != 0 and message in err and "\n" not in err and "Traceback" not in err


def test_a_protocol_of_one_model_refuses_several(tmp_path, capsys):
    task = write_msd(tmp_path / "Task89", 1)
    rc = main(
        [
            "evaluate",
            str(task),
            "--protocol",
            "cv5-2d",
            "-o",
            str(tmp_path / "o"),
            "--no-progress",
            "--model",
            "a",
            "--model",
            "b",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "protocol cv5-2d evaluates one model" in err and "\n" not in err
