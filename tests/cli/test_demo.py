"""``segeval demo``: bad input is refused in one line before the viewer opens."""

from __future__ import annotations

import pytest

from napari_segeval.cli import main


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("missing", "not a folder"),
        (
            "empty",
            "not a results folder (no run.json; make one with segeval evaluate DATA "
            "--output-dir DIR)",
        ),
    ],
)
def test_results_that_are_not_a_results_folder_are_one_line(
    tmp_path, capsys, monkeypatch, name, problem
):
    from napari_segeval._widgets import demo

    def opened(*args, **kwargs):
        raise AssertionError("the viewer was opened")

    monkeypatch.setattr(demo, "run_results_demo", opened)
    monkeypatch.setenv("DISPLAY", ":0")
    (tmp_path / "empty").mkdir()
    rc = main(["demo", "--results", str(tmp_path / name), "--json"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err == f"segeval demo: error: {tmp_path / name}: {problem}\n"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--eps", "-1", "--eps must be in [0, 1] (normalized units), got -1"),
        ("--eps", "nan", "--eps must be in [0, 1] (normalized units), got nan"),
        ("--eps", "2", "--eps must be in [0, 1] (normalized units), got 2"),
        ("--steps", "0", "--steps must be in [1, 500], got 0"),
        ("--steps", "501", "--steps must be in [1, 500], got 501"),
    ],
)
def test_attack_settings_the_panel_would_clamp_are_one_line(
    tmp_path, capsys, monkeypatch, option, value, message
):
    from napari_segeval._widgets import demo

    def opened(*args, **kwargs):
        raise AssertionError("the viewer was opened")

    monkeypatch.setattr(demo, "run_demo", opened)
    monkeypatch.setenv("DISPLAY", ":0")
    rc = main(["demo", option, value, "--screenshot", str(tmp_path / "shot.png"), "--json"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err == f"segeval demo: error: {message}\n"


def test_the_demos_auto_model_is_one_whose_correction_helps(monkeypatch):
    from napari_segeval.cli._demo import demo_model
    from napari_segeval.models.litemedsam import _asset

    assert demo_model(False) == "builtin"
    monkeypatch.setattr(_asset, "installed_version", lambda entry=None: "0.1.1")
    assert demo_model(True) == "litemedsam"
    monkeypatch.setattr(_asset, "installed_version", lambda entry=None: None)
    assert demo_model(True) == "threshold"


@pytest.mark.parametrize(
    ("env", "bindings", "problem"),
    [
        (
            {"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"},
            True,
            "QT_QPA_PLATFORM=offscreen has no OpenGL",
        ),
        (
            {"DISPLAY": ":0"},
            False,
            "napari needs a Qt binding and none is installed: pip install PyQt6",
        ),
    ],
)
def test_no_usable_qt_is_one_line_before_the_viewer(
    tmp_path, capsys, monkeypatch, env, bindings, problem
):
    """No Qt binding, or Qt's offscreen platform (no OpenGL): one line, nothing opened."""
    import importlib.util

    from napari_segeval._widgets import demo
    from napari_segeval.cli._demo import QT_BINDINGS

    def opened(*args, **kwargs):
        raise AssertionError("the viewer was opened")

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in QT_BINDINGS and not bindings else real(name, *a),
    )
    monkeypatch.setattr(demo, "run_demo", opened)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    rc = main(["demo", "--screenshot", str(tmp_path / "s.png")])
    err = capsys.readouterr().err
    assert rc == 2 and problem in err and len(err.strip().splitlines()) == 1
