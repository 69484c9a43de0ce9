"""The command line's one progress bar: drawn on a terminal, never with --json or in a pipe."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import pytest

from napari_segeval.cli._progress import is_terminal, progress_bar

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "evaluation"))

from _segeval_toy import TOY, write_msd


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def frames(stream: io.StringIO) -> list[str]:
    """The successive states of the bar (tqdm redraws the line after a carriage return)."""
    return [f.strip() for f in stream.getvalue().replace("\n", "\r").split("\r") if f.strip()]


def test_bar_starts_at_the_resumed_work_and_shows_rate_and_eta():
    out = FakeTerminal()
    with progress_bar("cases", "case", stream=out, mininterval=0) as bar:
        bar(2, 6)  # two cases resumed from an earlier run: the bar's initial count
        for done in (3, 4):
            bar(done, 6)
    states = frames(out)
    assert states[0].startswith("cases:") and "2/6" in states[0]
    assert "4/6" in states[-1]
    assert "case/s" in states[-1] or "s/case" in states[-1]  # rate
    assert "<" in states[-1]  # elapsed<remaining: the ETA


def test_total_may_change_and_close_without_calls_is_silent():
    out = FakeTerminal()
    with progress_bar("windows", "window", stream=out, mininterval=0):
        pass
    assert out.getvalue() == ""
    with progress_bar("windows", "window", stream=out, mininterval=0) as bar:
        bar(0, 4)
        bar(3, 8)
    assert "3/8" in frames(out)[-1]


def test_no_bar_off_a_terminal_or_when_disabled():
    assert not is_terminal(io.StringIO()) and is_terminal(FakeTerminal())
    with progress_bar("attack", "pass", stream=io.StringIO()) as progress:
        assert progress is None
    with progress_bar("attack", "pass", enabled=False, stream=FakeTerminal()) as progress:
        assert progress is None
    out = FakeTerminal()
    with progress_bar("attack passes", "pass", stream=out, mininterval=0) as progress:
        for i in range(1, 4):
            progress(i, 3)
    assert frames(out)[-1].startswith("attack passes: 100%")
    assert out.getvalue().endswith("\n")  # the line is finished on exit


def _evaluate(argv: list[str]) -> int:
    from napari_segeval.cli import _evaluate

    parser = argparse.ArgumentParser()
    _evaluate.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.parametrize("flag", [None, "--json", "--no-progress"])
def test_evaluate_draws_the_bar_on_a_terminal_only(tmp_path, monkeypatch, capsys, flag):
    task = write_msd(tmp_path / "Task93", 2)
    err = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", err)
    argv = [
        "evaluate",
        str(task),
        "--protocol",
        "msd-robust",
        "-o",
        str(tmp_path / "o"),
        "--param",
        f"model={TOY}",
        "--no-report",
        "--workers",
        "1",
    ] + ([flag] if flag else [])
    assert _evaluate(argv) == 0
    stdout = capsys.readouterr().out
    if flag is None:
        assert frames(err)[0].startswith("cases:") and "2/2" in frames(err)[-1]
    else:
        assert err.getvalue() == ""
    if flag == "--json":
        assert json.loads(stdout)["n_ok"] == 2
