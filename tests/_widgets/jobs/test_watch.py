"""What ends a job from outside: its window or panel closing, its runner destroyed, quitting."""

from __future__ import annotations

import threading

from napari_segeval._widgets.jobs.worker import JobRunner

from ..conftest import held_steps, wait_job


def _shown_panel(qtbot):
    """A shown window holding tabs, the first holding a panel with a runner."""
    from qtpy.QtWidgets import QMainWindow, QTabWidget, QVBoxLayout, QWidget

    window = QMainWindow()
    tabs = QTabWidget()
    panel, other = QWidget(), QWidget()
    runner = JobRunner(activity=False)
    QVBoxLayout(panel).addWidget(runner)
    tabs.addTab(panel, "panel")
    tabs.addTab(other, "other")
    window.setCentralWidget(tabs)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window, tabs, panel, runner


def _closed(runner, qtbot, job):
    outcomes = []
    runner.job_done.connect(lambda name, outcome: outcomes.append(outcome))
    qtbot.waitUntil(lambda: job.closed, timeout=10000)
    assert not job.alive  # joined before `closed` is seen from here
    return outcomes


def test_closing_the_window_cancels_and_joins_the_job(qtbot):
    window, _tabs, _panel, runner = _shown_panel(qtbot)
    job = runner.start("steps", held_steps, threading.Event())
    window.close()
    assert _closed(runner, qtbot, job) == ["closed"]
    assert runner.status.text() == "steps: stopped (its window was closed)"
    assert not runner.running


def test_closing_the_panel_cancels_and_joins_the_job(qtbot):
    _window, _tabs, panel, runner = _shown_panel(qtbot)
    job = runner.start("steps", held_steps, threading.Event())
    panel.setParent(None)  # what napari's dock close button does to the panel
    qtbot.addWidget(panel)
    assert _closed(runner, qtbot, job) == ["closed"]
    assert runner.status.text() == "steps: stopped (its panel was closed)"


def test_another_tab_keeps_the_job_running(qtbot):
    _window, tabs, _panel, runner = _shown_panel(qtbot)
    release = threading.Event()
    done = []
    job = runner.start("steps", held_steps, release, on_done=done.append)
    tabs.setCurrentIndex(1)  # the runner's panel is hidden, its window is not
    qtbot.wait(50)
    assert runner.job is job and not job.cancel_event.is_set()
    release.set()
    wait_job(qtbot, runner)
    assert done == [3]


def test_a_destroyed_runner_closes_and_joins_its_job(make_napari_viewer, qtbot):
    from qtpy.QtCore import QCoreApplication, QEvent

    make_napari_viewer()  # the activity dock
    runner = JobRunner()  # in no window: only its destruction closes the job
    job = runner.start("steps", held_steps, threading.Event())
    bar = runner.activity
    runner.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert job.closed and not job.alive
    assert bar.disable  # its bar left napari's activity dock


def test_quitting_cancels_and_ends_every_running_job(qtbot):
    from napari.qt.threading import WorkerBase

    runners = [JobRunner(activity=False) for _ in range(2)]
    for r in runners:
        qtbot.addWidget(r)
    jobs = [r.start(f"steps {i}", held_steps, threading.Event()) for i, r in enumerate(runners)]
    qtbot.waitUntil(lambda: all(j.alive for j in jobs), timeout=10000)
    WorkerBase.await_workers(10000)  # napari connects it to QApplication.aboutToQuit
    assert all(j.cancel_event.is_set() and not j.alive for j in jobs)
    for r in runners:
        wait_job(qtbot, r)
    assert [r.status.text() for r in runners] == ["steps 0: cancelled", "steps 1: cancelled"]
