"""Run one long core function in napari's worker thread pool: progress, cancel, a clean end
(the job lifecycle: docs/design.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from functools import partial
from typing import Any

from napari.qt.threading import WorkerBase, WorkerBaseSignals
from napari.utils import cancelable_progress
from napari.utils.notifications import notification_manager, show_error, show_info
from qtpy.QtCore import QThreadPool, Signal
from qtpy.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from napari_segeval._widgets.jobs.watch import qt_alive, watch_destroyed, watch_layers, watch_window

#: Longest wait (seconds) for a cancelled job when its panel or viewer closes.
JOIN_TIMEOUT_S = 10.0

#: Fewest threads of Qt's global pool (napari's workers): the panels' jobs may run at once,
#: and a job queued behind another would wait for it (the pool has one thread per core).
MIN_THREADS = 8


class Outcome(str, Enum):
    """How a job ended: ``job_done``'s second argument."""

    OK = "ok"  # its result was handed to ``on_done``
    CANCELLED = "cancelled"  # a Cancel button stopped it
    ERROR = "error"  # it raised: shown as a notification, never napari's default handler
    DROPPED = "dropped"  # a layer in ``needs`` was removed while it ran
    CLOSED = "closed"  # its panel or window closed while it ran


class JobSignals(WorkerBaseSignals):
    """A worker's signals, and what a job reports while it runs."""

    progressed = Signal(int, int)  # done, total
    called = Signal(object, tuple)  # a ``relay`` callback and its arguments


class Job(WorkerBase):
    """One run of ``fn(*args, progress=..., cancel=..., **kwargs)``: a superqt worker.

    ``relay`` callables (``fn``'s keywords) run on the main thread via ``called``; ``gone``:
    why its result is no longer wanted; once ``closed`` nothing it reports is handled.
    """

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().__init__(SignalsClass=JobSignals)
        self._call = (fn, args, kwargs)
        self.name = getattr(fn, "__name__", "job")
        self.needs: tuple = ()
        self.relay: dict[str, Callable[..., None]] = {}
        self.cancel_event = threading.Event()
        self.gone: str | None = None
        self.closed = False
        self.outcome: tuple[bool, Any] | None = None  # (True, result) or (False, exception)
        self._begun, self._ended = threading.Event(), threading.Event()
        self._start_lock = threading.Lock()  # a close and the thread's start are ordered

    def __repr__(self) -> str:
        return f"Job({self.name!r}, alive={self.alive}, gone={self.gone!r})"

    @property
    def alive(self) -> bool:
        return self._begun.is_set() and not self._ended.is_set()

    def run(self) -> None:
        """Run in the pool's thread; a job cancelled before this is never marked begun."""
        with self._start_lock:
            if not self.cancel_event.is_set():
                self._begun.set()
        try:
            super().run()
        finally:
            self._ended.set()

    def work(self) -> Any:
        """Call ``fn`` (unless cancelled before it started)."""
        from napari_segeval._cancel import check_cancel

        check_cancel(self.cancel_event, self.name)
        fn, args, kwargs = self._call
        calls = {key: partial(self._relay, cb) for key, cb in self.relay.items()}
        return fn(*args, progress=self._progress, cancel=self.cancel_event, **kwargs, **calls)

    def _progress(self, done: int, total: int) -> None:
        self.progressed.emit(int(done), int(total))

    def _relay(self, callback: Callable[..., None], *args: Any) -> None:
        self.called.emit(callback, args)

    def quit(self) -> None:
        """Ask the job to stop: ``fn`` raises Cancelled at its next check."""
        super().quit()
        self.cancel_event.set()

    def cancel(self, reason: str | None = None) -> None:
        """Ask the job to stop; with ``reason``, its result is no longer wanted."""
        if reason is not None and self.gone is None:
            self.gone = reason
        self.quit()

    def close(self, reason: str, timeout: float = JOIN_TIMEOUT_S) -> bool:
        """Cancel, handle nothing more, and wait at most ``timeout`` s; True once ``fn`` ended."""
        with self._start_lock:
            self.closed = True
            self.cancel(reason)
            begun = self._begun.is_set()
        if begun:
            self._ended.wait(timeout)
        return not self.alive

    def needs_met(self, viewer: Any) -> bool:
        """True when every layer in ``needs`` is in ``viewer`` (or there is no viewer)."""
        return viewer is None or all(layer in viewer.layers for layer in self.needs)


class JobProgress(cancelable_progress):
    """A job's bar in napari's activity dock whose Cancel cancels the job at once (napari's
    runs ``cancel_callback`` only while iterated)."""

    def cancel(self) -> None:
        super().cancel()
        if self.cancel_callback is not None:
            self.cancel_callback()


def error_message(exc: BaseException) -> str:
    """The text shown to a person for an exception raised by a job."""
    from napari_segeval._errors import SegEvalError

    return str(exc) if isinstance(exc, SegEvalError) else f"{type(exc).__name__}: {exc}"


class JobRunner(QWidget):
    """A progress bar, a status line and a Cancel button driving one job at a time.

    ``activity`` False: no bar in napari's activity dock (short jobs); ``viewer`` holds the
    layers of ``needs``; ``notify`` False: a dropped job is said in the status line only.
    """

    job_done = Signal(str, str)  # job name, outcome (an Outcome's string)

    def __init__(self, *, activity: bool = True, viewer: Any = None, notify: bool = True) -> None:
        super().__init__()
        self.show_activity = activity
        self.viewer = viewer
        self.notify = notify
        self.bar = QProgressBar()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self._show_bar(False)
        row = QHBoxLayout()
        row.addWidget(self.bar, 1)
        row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.status)
        self.job: Job | None = None
        self.activity: Any = None
        self.worker_name = ""
        self.last_error: str | None = None
        self._on_done: Callable[[Any], None] | None = None
        self._unwatch: list[Callable[[], None]] = []
        self._next: tuple[str, Callable[[], Any]] | None = None

    @property
    def running(self) -> bool:
        return self.job is not None

    def start(
        self,
        name: str,
        fn: Callable[..., Any],
        *args: Any,
        on_done: Callable[[Any], None] | None = None,
        needs: Iterable[Any] = (),
        relay: Mapping[str, Callable[..., None]] | None = None,
        **kwargs: Any,
    ) -> Job | None:
        """Start ``fn(*args, progress=..., cancel=..., **kwargs)`` in a worker thread.

        ``on_done(result)`` and ``relay``'s callbacks run on the main thread while every
        layer in ``needs`` is in the viewer. None (a notification) while a job runs.
        """
        if self.running:
            show_info(f"{self.worker_name} is still running: wait or cancel it")
            return None
        job = Job(fn, *args, **kwargs)
        for signal, handler in (
            (job.progressed, self._on_progress),
            (job.called, self._on_call),
            (job.finished, self._finish),
        ):
            signal.connect(partial(handler, job))
        job.returned.connect(lambda result: setattr(job, "outcome", (True, result)))
        job.errored.connect(lambda exc: setattr(job, "outcome", (False, exc)))
        # a warning in a job: napari's warning notification, as for napari's workers
        job.warned.connect(lambda args: notification_manager.receive_warning(*args))
        job.name, job.needs, job.relay = name, tuple(needs), dict(relay or {})
        self.job = job
        self.worker_name, self.last_error, self._on_done = name, None, on_done
        self.bar.setRange(0, 0)  # busy until the first progress report
        self.status.setText(f"{name}...")
        self._show_bar(True)
        if self.show_activity:  # total=0: indeterminate until the first report
            self.activity = JobProgress(total=0, desc=name, cancel_callback=self.cancel)
        self._unwatch = [
            watch_layers(self.viewer, job, self._stopping),
            watch_window(self, self.close_job),
            watch_destroyed(self, job, self.activity),
        ]
        pool = QThreadPool.globalInstance()
        if pool is not None:  # None only in the stubs: Qt always has a global pool
            pool.setMaxThreadCount(max(pool.maxThreadCount(), MIN_THREADS))
        job.start()
        return job

    def then(self, what: str, fn: Callable[[], Any], *, cancel: bool = True) -> None:
        """Call ``fn()`` (:func:`run_guarded`) once no job runs, replacing a queued one;
        ``cancel`` stops the running job; a close drops it."""
        self._next = (what, fn)
        if not self.running:
            self._run_next()
        elif cancel:
            self.cancel()

    def start_next(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """:meth:`start` once the running job (cancelled) has ended: the newest request wins."""
        self.then(name, lambda: self.start(name, fn, *args, **kwargs))

    def drop_next(self) -> None:
        """Forget the call :meth:`then` queued."""
        self._next = None

    def _run_next(self) -> None:
        queued, self._next = self._next, None
        if queued is not None:
            run_guarded(*queued)

    def cancel(self) -> None:
        """Ask the running job to stop (it raises Cancelled at its next check)."""
        job = self.job
        if job is None:
            return
        job.cancel()
        if qt_alive(self):
            self.status.setText(f"cancelling {job.name}...")
        if self.activity is not None:
            self.activity.set_description(f"cancelling {job.name}")

    def close_job(self, reason: str = "its panel was closed") -> bool:
        """Cancel the running job for good, wait for it (:data:`JOIN_TIMEOUT_S`); True once ended."""
        job = self.job
        if job is None:
            return True
        joined = job.close(reason)
        self._end_ui(f"{job.name}: stopped ({reason})")
        self._emit_done(job.name, Outcome.CLOSED)
        return joined

    def _stopping(self, job: Job) -> None:
        if qt_alive(self) and job is self.job:
            self.status.setText(f"{job.name}: stopping ({job.gone})")

    def _wanted(self, job: Job) -> bool:
        """Whether ``job``'s reports are still handled (not an earlier or closed job's)."""
        return job is self.job and not job.closed and qt_alive(self)

    def _on_progress(self, job: Job, done: int, total: int) -> None:
        if not self._wanted(job):
            return
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(min(done, max(total, 1)))
        bar = self.activity
        if bar is not None:
            if bar.total != total:
                bar.total = max(total, 0)
            bar.update(done - bar.n)

    def _on_call(self, job: Job, callback: Callable[..., None], args: tuple) -> None:
        if self._wanted(job) and job.gone is None and job.needs_met(self.viewer):
            try:
                callback(*args)
            except Exception as exc:  # noqa: BLE001 - never crash the viewer
                job.cancel(f"showing its progress failed: {error_message(exc)}")

    def _end_ui(self, text: str, value: int = 0) -> None:
        """Forget the job and show its end (closing napari's bar may delete the runner)."""
        for stop in self._unwatch:
            stop()
        self._unwatch, self.job = [], None
        bar, self.activity = self.activity, None
        if bar is not None:
            bar.close()
        if qt_alive(self):
            self.bar.setRange(0, 1)
            self.bar.setValue(value)
            self._show_bar(False)  # the status line says how it ended
            self.status.setText(text)

    def _show_bar(self, running: bool) -> None:
        """Only a running job shows a bar and Cancel: an idle 0 % bar reads as stalled."""
        self.cancel_button.setEnabled(running)
        self.bar.setVisible(running)
        self.cancel_button.setVisible(running)

    def _finish(self, job: Job) -> None:
        """The worker's ``finished``: after ``returned`` or ``errored`` (neither if cancelled)."""
        from napari_segeval._cancel import Cancelled

        if not self._wanted(job):
            return
        name = job.name
        ok, value = job.outcome or (False, Cancelled(f"{name} cancelled"))
        if job.gone is None and not job.needs_met(self.viewer):
            job.gone = "a layer it needs was removed"
        if job.gone is not None:
            text = f"{name} dropped: {job.gone}"
            self._end_ui(text)
            self._emit_done(name, Outcome.DROPPED)
            if self.notify:
                show_info(text)
        elif ok:
            self._end_ui(f"{name}: done", value=1)
            if self._on_done is not None:
                try:
                    self._on_done(value)
                except Exception as exc:  # noqa: BLE001 - show it, never crash the viewer
                    self._failed(name, exc)
                    return
            self._emit_done(name, Outcome.OK)
        elif isinstance(value, Cancelled):
            self._end_ui(f"{name}: cancelled")
            self._emit_done(name, Outcome.CANCELLED)
        else:
            self._end_ui("")
            self._failed(name, value)

    def _failed(self, name: str, exc: BaseException) -> None:
        self.last_error = error_message(exc)
        if qt_alive(self):  # an on_done that failed may have closed the panel
            self.bar.setValue(0)
            self.status.setText(f"{name} failed: {self.last_error}")
        self._emit_done(name, Outcome.ERROR)
        show_error(f"{name} failed: {self.last_error}")

    def _emit_done(self, name: str, outcome: Outcome) -> None:
        """``job_done`` (unless the runner went: a notification processes events), then
        the queued call (:meth:`then`), unless it closed."""
        if outcome == Outcome.CLOSED:
            self._next = None
        if qt_alive(self):
            self.job_done.emit(name, outcome.value)
            if not self.running:
                self._run_next()


def run_guarded(what: str, fn: Callable[[], Any]) -> Any:
    """Call ``fn()`` on the GUI thread; show an error notification instead of raising."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a button must never crash the viewer
        show_error(f"{what} failed: {error_message(exc)}")
        return None


def button(text: str, tip: str, action: Callable[[], Any], what: str | None = None) -> QPushButton:
    """A button whose click runs ``action``; an error is a notification about ``what``."""
    b = QPushButton(text)
    b.setToolTip(tip)
    b.clicked.connect(lambda *_: run_guarded(what or text.strip("…"), action))
    return b
