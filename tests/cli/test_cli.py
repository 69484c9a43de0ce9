"""The ``segeval`` framework: help, info, errors without tracebacks, JSON output."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from napari_segeval.cli import main
from napari_segeval.cli._common import dumps, format_table, json_safe


def test_help_lists_subcommands(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for name in ("info", "inspect", "metrics"):
        assert name in out


def test_console_script_help():
    out = subprocess.run(
        [sys.executable, "-m", "napari_segeval.cli", "--help"], capture_output=True, text=True,
        check=False,
    )
    assert out.returncode == 0
    assert "segeval" in out.stdout


def test_info_json_is_one_object(capsys):
    assert main(["info", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["packages"]["numpy"] == np.__version__
    assert payload["device"]["default"] in ("cpu", "cuda", "mps")


def test_info_table(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "compute device" in out and "SimpleITK" in out


def test_missing_file_is_one_line_error(tmp_path, capsys):
    code = main(["inspect", str(tmp_path / "nope.nii.gz")])
    err = capsys.readouterr().err
    assert code == 2
    assert "nope.nii.gz" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_debug_shows_traceback(tmp_path):
    from napari_segeval import SegEvalError

    with pytest.raises(SegEvalError):
        main(["--debug", "inspect", str(tmp_path / "nope.nii.gz")])


def test_json_safe_strict():
    text = dumps({"x": float("nan"), "y": float("-inf"), "z": np.float32(0.5)})
    assert json.loads(text) == {"x": None, "y": "-inf", "z": 0.5}
    assert json_safe((1, 2)) == [1, 2]


def test_format_table_alignment():
    out = format_table(["a", "bbb"], [[1, 2.0], [333, None]]).splitlines()
    assert out[0] == "a    bbb"
    assert out[3] == "333  -"
