"""The job runner: napari's activity dock, errors as notifications, cancel from the dock."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from napari.utils import progress
from napari.utils.notifications import notification_manager

from napari_segeval._errors import ReadError
from napari_segeval._widgets.jobs.worker import JobRunner

from ..conftest import held_steps, wait_job

PACKAGE = Path(__file__).resolve().parents[3] / "napari_segeval"


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
    assert runner.bar.isHidden() and runner.cancel_button.isHidden()  # no job yet
    runner.start("steps", held_steps, release, 3, on_done=done.append)
    bar = runner.activity
    assert isinstance(bar, progress)
    assert bar.desc == "steps"
    qtbot.waitUntil(lambda: bar.n == 1, timeout=10000)
    assert bar.total == 3
    assert bar.gui  # napari's activity dock took it up
    assert runner.bar.value() == 1 and runner.bar.maximum() == 3
    assert not runner.bar.isHidden() and not runner.cancel_button.isHidden()
    release.set()
    wait_job(qtbot, runner)
    assert done == [3]
    # nothing runs: no bar and no greyed Cancel that would read as stalled
    assert runner.bar.isHidden() and runner.cancel_button.isHidden()
    assert runner.status.text() == "steps: done"
    assert bar.n == 3
    assert bar.disable  # closed: tqdm disables a closed bar
    assert runner.activity is None


def test_cancel_from_the_activity_dock_cancels_the_job(runner, qtbot):
    _, runner = runner
    outcomes = []
    runner.job_done.connect(lambda name, outcome: outcomes.append(outcome))
    runner.start("steps", held_steps, threading.Event())
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


@pytest.mark.parametrize(
    ("exc", "shown"),
    [
        (ValueError("bad value"), "ValueError: bad value"),
        (ReadError("ct.nii: not a NIfTI file"), "ct.nii: not a NIfTI file"),
    ],
)
def test_job_error_becomes_a_notification_only(
    runner, qtbot, notifications, napari_errors, exc, shown
):
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


def test_error_in_the_done_callback_becomes_a_notification(
    runner, qtbot, notifications, napari_errors
):
    _, runner = runner
    release = threading.Event()
    release.set()

    def on_done(result):
        raise RuntimeError("layer gone")

    runner.start("steps", held_steps, release, on_done=on_done)
    wait_job(qtbot, runner)
    assert "steps failed: RuntimeError: layer gone" in notifications()
    assert napari_errors == []


def test_widgets_use_public_napari_api_only():
    private = ("_type_string", "_ignore_errors")
    found = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in private
        if name in path.read_text(encoding="utf-8")
    ]
    assert not found, f"private napari API in use: {found}"


# -- the job lifecycle: layers a job needs, closing its panel or window --------------------
def _until_released(release: threading.Event, *, progress=None, cancel=None, show=None) -> str:
    """Report, call ``show`` (a relay), wait for ``release`` ignoring cancel, then finish."""
    progress(0, 1)
    if show is not None:
        show("first")
    release.wait(30)
    if show is not None:
        show("late")
    return "result"


def _runner_in(viewer, qtbot, **kwargs) -> JobRunner:
    runner = JobRunner(viewer=viewer, **kwargs)
    qtbot.addWidget(runner)
    return runner


def test_removing_a_layer_the_job_needs_cancels_it_and_says_so(
    make_napari_viewer, qtbot, notifications
):
    viewer = make_napari_viewer()
    image = viewer.add_image(np.zeros((4, 4)), name="ct")
    runner = _runner_in(viewer, qtbot)
    done, outcomes = [], []
    runner.job_done.connect(lambda name, outcome: outcomes.append(outcome))
    job = runner.start("steps", held_steps, threading.Event(), needs=[image], on_done=done.append)
    qtbot.waitUntil(lambda: runner.bar.maximum() == 3, timeout=10000)
    viewer.layers.remove(image)
    assert job.cancel_event.is_set() and job.gone == "layer 'ct' was removed"
    assert runner.status.text() == "steps: stopping (layer 'ct' was removed)"
    wait_job(qtbot, runner)
    assert outcomes == ["dropped"] and done == []
    assert "steps dropped: layer 'ct' was removed" in notifications()
    assert not job.alive


def test_a_result_that_comes_after_its_layer_is_gone_is_dropped(
    make_napari_viewer, qtbot, notifications
):
    viewer = make_napari_viewer()
    image = viewer.add_image(np.zeros((4, 4)), name="ct")
    other = viewer.add_image(np.zeros((4, 4)), name="other")
    runner = _runner_in(viewer, qtbot)
    release, done, shown = threading.Event(), [], []
    outcomes = []
    runner.job_done.connect(lambda name, outcome: outcomes.append(outcome))
    runner.start(
        "steps",
        _until_released,
        release,
        needs=[image],
        on_done=done.append,
        relay={"show": lambda what: shown.append((what, threading.current_thread()))},
    )
    qtbot.waitUntil(lambda: bool(shown), timeout=10000)
    viewer.layers.remove(other)  # a layer the job does not need: nothing happens
    assert runner.job.gone is None
    viewer.layers.remove(image)
    release.set()
    wait_job(qtbot, runner)
    assert outcomes == ["dropped"] and done == []  # the job ignored cancel: its result is dropped
    assert shown == [("first", threading.main_thread())]  # the late relay call is dropped too
    assert "steps dropped: layer 'ct' was removed" in notifications()


def test_surface_like_jobs_can_drop_quietly(make_napari_viewer, qtbot, notifications):
    viewer = make_napari_viewer()
    image = viewer.add_image(np.zeros((4, 4)), name="ct")
    runner = _runner_in(viewer, qtbot, notify=False)
    runner.start("surface metrics", held_steps, threading.Event(), needs=[image])
    viewer.layers.remove(image)
    wait_job(qtbot, runner)
    assert runner.status.text() == "surface metrics dropped: layer 'ct' was removed"
    assert not [n for n in notifications() if "dropped" in n]


def test_jobs_of_several_panels_run_at_once(qtbot):
    """Qt's pool has a thread per core: a job must not wait for another panel's job."""
    release = threading.Event()
    runners = [_runner_in(None, qtbot, activity=False) for _ in range(4)]
    jobs = [r.start(f"steps {i}", held_steps, release) for i, r in enumerate(runners)]
    try:
        qtbot.waitUntil(lambda: all(job.alive for job in jobs), timeout=10000)
    finally:
        release.set()
    for r in runners:
        wait_job(qtbot, r)
    assert [r.status.text() for r in runners] == [f"steps {i}: done" for i in range(4)]


def _warns(*, progress=None, cancel=None) -> int:
    import warnings

    warnings.warn("qfac fixed to 1 in a job", UserWarning, stacklevel=1)
    return 1


def test_a_job_warning_becomes_a_napari_notification(runner, qtbot, notifications):
    _, runner = runner
    done = []
    runner.start("read", _warns, on_done=done.append)
    wait_job(qtbot, runner)
    qtbot.wait(50)
    assert done == [1]
    assert "qfac fixed to 1 in a job" in notifications()


def test_a_job_closed_before_its_thread_took_it_up_never_runs(qtbot):
    from napari_segeval._widgets.jobs.worker import Job

    called, alive_at_start = [], []
    job = Job(lambda **_: called.append(1))
    job.started.connect(lambda: alive_at_start.append(job.alive))
    assert job.close("its panel was closed", timeout=0)  # no thread has it yet
    job.run()  # the pool's thread takes it up after the close
    assert called == [] and alive_at_start == [False] and not job.alive
