"""Run one long core function in a napari worker thread, with progress and cancel.

The core function is called as ``fn(*args, progress=cb, cancel=event, **kwargs)``
(house rule: long work takes ``progress`` and ``cancel``): ``cb(done, total)``
moves the panel's progress bar and a bar in napari's activity dock (a
:class:`napari.utils.progress`), both through a queued Qt signal so they are
only touched on the main thread; the Cancel button sets ``event``.

Only napari's public thread API is used: :func:`napari.qt.threading.create_worker`
with our own ``errored`` handler (given through ``_connect``, so napari adds no
handler that re-raises). Errors never escape to napari's default error handler:
:class:`~napari_segeval._cancel.Cancelled` shows "cancelled", a
:class:`~napari_segeval._errors.SegEvalError` is shown with its message through
``napari.utils.notifications.show_error``, anything else with its type and
message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from napari.utils import cancelable_progress
from qtpy.QtCore import QObject, Signal
from qtpy.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget


class JobProgress(cancelable_progress):
    """A job's bar in napari's activity dock; its Cancel button cancels the job at once.

    :class:`napari.utils.cancelable_progress` runs ``cancel_callback`` only while
    it is iterated; a job reports through ``progress(done, total)`` instead, so
    :meth:`cancel` calls it directly (on the main thread, from the dock's button).
    """

    def cancel(self) -> None:
        """Mark the bar cancelled and call ``cancel_callback``."""
        super().cancel()
        if self.cancel_callback is not None:
            self.cancel_callback()


class _Bridge(QObject):
    progress = Signal(int, int)


def error_message(exc: BaseException) -> str:
    """The text shown to a person for an exception raised by a job.

    Examples
    --------
    >>> from napari_segeval._errors import ReadError
    >>> error_message(ReadError("ct.nii: not a NIfTI file"))
    'ct.nii: not a NIfTI file'
    >>> error_message(ValueError("bad"))
    'ValueError: bad'
    """
    from napari_segeval._errors import SegEvalError

    if isinstance(exc, SegEvalError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class JobRunner(QWidget):
    """A progress bar, a status line and a Cancel button driving one job at a time.

    ``activity=False`` leaves napari's activity dock out (for jobs of a second or
    less, where creating and updating that bar costs more than the job).

    Attributes
    ----------
    worker : napari FunctionWorker or None
        The running worker.
    activity : napari.utils.progress or None
        The running job's bar in napari's activity dock (closed when it ends).
    last_error : str or None
        Message of the last failed job (also shown as a notification).
    """

    job_done = Signal(str, str)  # job name, outcome: "ok" | "cancelled" | "error"

    def __init__(self, parent: QWidget | None = None, activity: bool = True) -> None:
        super().__init__(parent)
        self.show_activity = activity  # False: no bar in napari's activity dock (short jobs)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.status = QLabel("")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.status.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(self.bar, 1)
        row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.status)
        self.worker = None
        self.activity: Any = None
        self.worker_name = ""
        self.last_error: str | None = None
        self._event: threading.Event | None = None
        self._bridge = _Bridge()
        self._bridge.progress.connect(self._on_progress)

    # -- API ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """True while a job runs."""
        return self.worker is not None

    def start(self, name: str, fn: Callable[..., Any], *args: Any,
              on_done: Callable[[Any], None] | None = None, **kwargs: Any) -> Any:
        """Start ``fn(*args, progress=..., cancel=..., **kwargs)`` in a worker thread.

        Returns the worker, or None when a job is already running (a notification
        says so).
        """
        from napari.qt.threading import create_worker

        if self.running:
            _notify_info(f"{self.worker_name} is still running: wait or cancel it")
            return None
        self.worker_name = name
        self.last_error = None
        event = threading.Event()
        self._event = event
        bridge = self._bridge

        def progress(done: int, total: int) -> None:
            bridge.progress.emit(int(done), int(total))

        # our own "errored" handler: napari then connects none that re-raises
        handlers = {"returned": lambda result: self._finish(name, "ok", result, on_done),
                    "errored": lambda exc: self._failed(name, exc)}
        worker = create_worker(fn, *args, progress=progress, cancel=event,
                               _connect=handlers, _start_thread=False, **kwargs)
        self.worker = worker
        self.bar.setRange(0, 0)  # busy until the first progress report
        self.status.setText(f"{name}...")
        self.cancel_button.setEnabled(True)
        # total=0: indeterminate until the first report; made after self.worker is
        # set, since adding a bar to the activity dock processes Qt events
        if self.show_activity:
            self.activity = JobProgress(total=0, desc=name, cancel_callback=self.cancel)
        worker.start()
        return worker

    def cancel(self) -> None:
        """Ask the running job to stop (it raises Cancelled at its next check)."""
        if self._event is not None:
            self._event.set()
            self.status.setText(f"cancelling {self.worker_name}...")
            if self.activity is not None:
                self.activity.set_description(f"cancelling {self.worker_name}")

    # -- slots ---------------------------------------------------------------------------
    def _on_progress(self, done: int, total: int) -> None:
        if self.worker is None:
            return
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(min(done, max(total, 1)))
        bar = self.activity
        if bar is not None:
            if bar.total != total:
                bar.total = max(total, 0)
            bar.update(done - bar.n)

    def _reset(self) -> None:
        if self.activity is not None:
            self.activity.close()
        self.activity = None
        self.worker = None
        self._event = None
        self.cancel_button.setEnabled(False)
        self.bar.setRange(0, 1)

    def _finish(self, name: str, outcome: str, result: Any,
                on_done: Callable[[Any], None] | None) -> None:
        self._reset()
        self.bar.setValue(1)
        self.status.setText(f"{name}: done")
        if on_done is not None:
            try:
                on_done(result)
            except Exception as exc:  # noqa: BLE001 - show it, never crash the viewer
                self._failed(name, exc, reset=False)
                return
        self.job_done.emit(name, outcome)

    def _failed(self, name: str, exc: BaseException, reset: bool = True) -> None:
        from napari_segeval._cancel import Cancelled

        if reset:
            self._reset()
        self.bar.setValue(0)
        if isinstance(exc, Cancelled):
            self.status.setText(f"{name}: cancelled")
            self.job_done.emit(name, "cancelled")
            return
        self.last_error = error_message(exc)
        self.status.setText(f"{name} failed: {self.last_error}")
        show_error(f"{name} failed: {self.last_error}")
        self.job_done.emit(name, "error")


def show_error(message: str) -> None:
    """Show an error notification in napari (never raises)."""
    from napari.utils.notifications import show_error as _show

    _show(message)


def _notify_info(message: str) -> None:
    from napari.utils.notifications import show_info

    show_info(message)


def run_guarded(what: str, fn: Callable[[], Any]) -> Any:
    """Call ``fn()`` on the GUI thread; show an error notification instead of raising."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a button must never crash the viewer
        show_error(f"{what} failed: {error_message(exc)}")
        return None
