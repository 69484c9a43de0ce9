"""The job runner: napari's activity dock, errors as notifications, cancel from the dock."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from napari.utils import progress
from napari.utils.notifications import notification_manager

from napari_segeval._cancel import check_cancel
from napari_segeval._errors import ReadError
from napari_segeval._widgets._worker import JobRunner

from .conftest import wait_job

PACKAGE = Path(__file__).resolve().parents[2] / "napari_segeval"


def _steps(release: threading.Event, n: int = 3, *, progress=None, cancel=None) -> int:
    """Report step 1 of ``n``, wait for ``release``, then finish the steps."""
    progress(1, n)
    while not release.wait(0.01):
        check_cancel(cancel, "steps")
    for i in range(2, n + 1):
        check_cancel(cancel, "steps")
        progress(i, n)
    return n


@pytest.fixture
def runner(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()  # the window's activity dock listens to progress objects
    runner = JobRunner()
    qtbot.addWidget(runner)
    return viewer, runner


@pytest.fixture
def napari_errors(monkeypatch):
    """What reached napari's default error handling (excepthook, receive_error)."""
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *exc: seen.append(exc))
    monkeypatch.setattr(notification_manager, "receive_error", lambda *exc: seen.append(exc))
    return seen


def test_job_reports_to_napari_activity_and_closes_its_bar(runner, qtbot):
    _, runner = runner
    release = threading.Event()
    done = []
    runner.start("steps", _steps, release, 3, on_done=done.append)
    bar = runner.activity
    assert isinstance(bar, progress)
    assert bar.desc == "steps"
    qtbot.waitUntil(lambda: bar.n == 1, timeout=10000)
    assert bar.total == 3
    assert bar.gui  # napari's activity dock took it up
    assert runner.bar.value() == 1 and runner.bar.maximum() == 3
    release.set()
    wait_job(qtbot, runner)
    assert done == [3]
    assert bar.n == 3
    assert bar.disable  # closed: tqdm disables a closed bar
    assert runner.activity is None


def test_cancel_from_the_activity_dock_cancels_the_job(runner, qtbot):
    _, runner = runner
    outcomes = []
    runner.job_done.connect(lambda name, outcome: outcomes.append(outcome))
    runner.start("steps", _steps, threading.Event())
    bar = runner.activity
    qtbot.waitUntil(lambda: bar.n == 1, timeout=10000)
    bar.cancel()  # what the dock's Cancel button does
    assert bar.desc.startswith("cancelling steps")
    wait_job(qtbot, runner)
    assert outcomes == ["cancelled"]
    assert runner.status.text() == "steps: cancelled"
    assert bar.disable


def _fails(exc, *, progress=None, cancel=None):
    raise exc


@pytest.mark.parametrize(("exc", "shown"), [
    (ValueError("bad value"), "ValueError: bad value"),
    (ReadError("ct.nii: not a NIfTI file"), "ct.nii: not a NIfTI file"),
])
def test_job_error_becomes_a_notification_only(runner, qtbot, notifications, napari_errors,
                                               exc, shown):
    _, runner = runner
    outcomes = []
    runner.job_done.connect(lambda name, outcome: outcomes.append(outcome))
    runner.start("segment", _fails, exc)
    bar = runner.activity
    wait_job(qtbot, runner)
    qtbot.wait(50)  # let any queued re-raise run
    assert outcomes == ["error"]
    assert runner.last_error == shown
    assert f"segment failed: {shown}" in notifications()
    assert napari_errors == []
    assert bar.disable


def test_error_in_the_done_callback_becomes_a_notification(runner, qtbot, notifications,
                                                          napari_errors):
    _, runner = runner
    release = threading.Event()
    release.set()

    def on_done(result):
        raise RuntimeError("layer gone")

    runner.start("steps", _steps, release, on_done=on_done)
    wait_job(qtbot, runner)
    assert "steps failed: RuntimeError: layer gone" in notifications()
    assert napari_errors == []


def test_widgets_use_public_napari_api_only():
    private = ("_type_string", "_ignore_errors")
    found = [f"{path.relative_to(PACKAGE)}: {name}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for name in private if name in path.read_text(encoding="utf-8")]
    assert not found, f"private napari API in use: {found}"
