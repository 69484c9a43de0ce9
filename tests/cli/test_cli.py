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
        [sys.executable, "-m", "napari_segeval.cli", "--help"],
        capture_output=True,
        text=True,
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


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "{bad}", "--debug"],
        ["uncertainty", "filter", "{bad}", "--remove", "0.1", "-o", "{out}", "--debug"],
    ],
)
def test_debug_after_the_subcommand_shows_the_traceback(tmp_path, capsys, argv):
    from napari_segeval._errors import ReadError

    bad = tmp_path / "nope.nii.gz"
    argv = [a.format(bad=bad, out=tmp_path / "o") for a in argv]
    with pytest.raises(ReadError, match="nope.nii.gz"):
        main(argv)
    assert main([a for a in argv if a != "--debug"]) == 2
    assert "nope.nii.gz" in capsys.readouterr().err


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


def _subparsers(parser):
    """``{"propagate": parser, "uncertainty score": parser, ...}`` of every (nested) subcommand."""
    import argparse

    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out[name] = sub
                out.update({f"{name} {k}": v for k, v in _subparsers(sub).items()})
    return out


def _option(parser, flag):
    return next((a for a in parser._actions if flag in a.option_strings), None)


def test_every_device_option_takes_the_same_values():
    from napari_segeval.cli import build_parser
    from napari_segeval.models._device import DEVICE_CHOICES

    found = {name: _option(p, "--device") for name, p in _subparsers(build_parser()).items()}
    found = {name: a for name, a in found.items() if a is not None}
    assert set(found) >= {"propagate", "segment", "attack", "demo", "uncertainty score"}
    for name, action in found.items():
        assert (tuple(action.choices), action.default) == (DEVICE_CHOICES, "auto"), name


def test_every_model_option_takes_the_registry_names():
    from napari_segeval.cli import build_parser
    from napari_segeval.evaluation.protocols import check_models, get_protocol
    from napari_segeval.models.registry import model_names

    commands = _subparsers(build_parser())
    takes = {
        "propagate": ["promptable"],
        "demo": ["promptable"],
        "segment": ["dense"],
        "attack": ["dense", "promptable"],
        "uncertainty score": ["promptable"],
    }
    # evaluate's --model is repeatable and checked against the protocol's kind of model
    assert {n for n, p in commands.items() if _option(p, "--model")} == {*takes, "evaluate"}
    assert _option(commands["evaluate"], "--model").default == []
    for protocol, kind in (("medsam2-3d", "promptable"), ("msd-robust", "dense")):
        names = list(model_names(kind))
        assert check_models(get_protocol(protocol), names) == names
    for name, kinds in takes.items():
        action = _option(commands[name], "--model")
        for kind in kinds:
            for model in model_names(kind):
                assert action.type(model) == model, (name, model)
                assert model in action.help, (name, model)


class _ClosedPipe:
    """A stdout whose reader has gone away (``segeval ... | head`` after head exits)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise ValueError("not a file")


def test_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["info", "--json"]) == 141
    assert capsys.readouterr().err == ""
