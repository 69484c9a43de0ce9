"""Run one long core function in a worker thread: progress, cancel, and a clean end.

The job lifecycle
-----------------
:meth:`JobRunner.start` runs ``fn(*args, progress=cb, cancel=event, **kwargs)``
(house rule: long work takes ``progress`` and ``cancel``) as a
:class:`~napari_segeval._widgets.jobs.thread.Job` in a worker thread. The worker
never touches Qt or layers: what it reports - progress, the ``relay``
callbacks (a propagation's partial slices), its result or its error - travels
through a queued Qt signal to the runner, which handles it on the main thread
only while the job is still wanted: it is the runner's current job, the runner
has not closed it, and every layer in ``needs`` is still in the viewer.

A job ends with ``job_done(name, outcome)``; ``outcome`` (an :class:`Outcome`, which
the signal carries as its string) is

``"ok"``
    its result was handed to ``on_done``;
``"cancelled"``
    the Cancel button (the panel's or the activity dock's) stopped it;
``"error"``
    it raised: a :class:`~napari_segeval._errors.SegEvalError` is shown with
    its message, anything else with its type and message (errors never reach
    napari's default handler);
``"dropped"``
    a layer in ``needs`` was removed from the viewer while it ran: the job was
    cancelled, and whatever it returned is dropped, with a notification;
``"closed"``
    its panel or its window closed while it ran (below).

Closing: when the runner's window closes (a person closing napari,
:meth:`napari.Viewer.close`), its panel leaves that window (napari's dock close
button), the runner is destroyed, or the application quits, the job is
cancelled and its thread joined for at most
:data:`~napari_segeval._widgets.jobs.thread.JOIN_TIMEOUT_S` seconds (jobs
check ``cancel`` between slices); nothing it reports afterwards reaches a
widget or a layer. :mod:`~napari_segeval._widgets.jobs.watch` watches for all
of these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

from napari.utils import cancelable_progress
from qtpy.QtCore import QObject, Signal
from qtpy.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from napari_segeval._widgets.jobs.thread import JOIN_TIMEOUT_S, Job, Report
from napari_segeval._widgets.jobs.watch import (
    close_jobs_on_quit,
    qt_alive,
    watch_destroyed,
    watch_layers,
    watch_window,
)


class Outcome(str, Enum):
    """How a job ended: ``job_done``'s second argument (the module docstring says each)."""

    OK = "ok"
    CANCELLED = "cancelled"
    ERROR = "error"
    DROPPED = "dropped"
    CLOSED = "closed"


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
    posted = Signal(object, object, object)  # job, what (a Report), payload


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

    The bar and Cancel are shown only while a job runs; the status line stays and
    says how the last job ended.

    Parameters
    ----------
    parent : QWidget, optional
    activity : bool
        False leaves napari's activity dock out (for jobs of a second or less,
        where creating and updating that bar costs more than the job).
    viewer : napari.Viewer, optional
        The viewer whose layers the jobs' ``needs`` name.
    notify : bool
        False: a dropped job is said in the status line only (jobs the panel
        restarts by itself, such as surface metrics).

    Attributes
    ----------
    job : Job or None
        The running job.
    activity : napari.utils.progress or None
        The running job's bar in napari's activity dock (closed when it ends).
    last_error : str or None
        Message of the last failed job (also shown as a notification).
    """

    job_done = Signal(str, str)  # job name, outcome (an Outcome's string)

    def __init__(
        self,
        parent: QWidget | None = None,
        activity: bool = True,
        *,
        viewer: Any = None,
        notify: bool = True,
    ) -> None:
        super().__init__(parent)
        self.show_activity = activity
        self.viewer = viewer
        self.notify = notify
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
        # only a running job shows a bar and Cancel: an idle 0 % bar reads as stalled
        self.bar.setVisible(False)
        self.cancel_button.setVisible(False)
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
        self._bridge = _Bridge()
        self._bridge.posted.connect(self._deliver)
        close_jobs_on_quit()

    # -- API ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """True while a job runs."""
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
    ) -> Any:
        """Start ``fn(*args, progress=..., cancel=..., **kwargs)`` in a worker thread.

        ``on_done(result)`` runs on the main thread when the job succeeds and
        every layer in ``needs`` is still in the viewer. Each ``relay`` entry
        ``keyword: callback`` is passed to ``fn`` as a callable the worker may
        call; ``callback`` then runs on the main thread, under the same checks.
        Returns the :class:`~napari_segeval._widgets.jobs.thread.Job`, or None
        when a job is already running (a notification says so).
        """
        if self.running:
            _notify_info(f"{self.worker_name} is still running: wait or cancel it")
            return None
        job = Job(name, needs)
        self.job = job
        self.worker_name, self.last_error, self._on_done = name, None, on_done
        self.bar.setRange(0, 0)  # busy until the first progress report
        self.status.setText(f"{name}...")
        self.cancel_button.setEnabled(True)
        self.bar.setVisible(True)
        self.cancel_button.setVisible(True)
        if self.show_activity:  # total=0: indeterminate until the first report
            self.activity = JobProgress(total=0, desc=name, cancel_callback=self.cancel)
        self._unwatch = [
            watch_layers(self.viewer, job, self._stopping),
            watch_window(self, self.close_job),
            watch_destroyed(self, job, self.activity),
        ]
        emit = self._bridge.posted.emit
        job.start(
            fn,
            args,
            kwargs,
            lambda what, payload: emit(job, what, payload),
            relay=dict(relay or {}),
        )
        return job

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

    def close_job(
        self, reason: str = "its panel was closed", timeout: float = JOIN_TIMEOUT_S
    ) -> bool:
        """Cancel the running job for good and join its thread (at most ``timeout`` s).

        Called when the runner's panel or window closes; the job's later reports
        are ignored. Returns True when no job thread runs any more.
        """
        job = self.job
        if job is None:
            return True
        joined = job.close(reason, timeout)
        self._end_ui(job, f"{job.name}: stopped ({reason})")
        self._emit_done(job.name, Outcome.CLOSED)
        return joined

    def _stopping(self, job: Job) -> None:
        if qt_alive(self) and job is self.job:
            self.status.setText(f"{job.name}: stopping ({job.gone})")

    # -- reports of the worker (main thread) -------------------------------------------
    def _deliver(self, job: Job, what: Report, payload: Any) -> None:
        if job is not self.job or job.closed or not qt_alive(self):
            return  # an earlier job, or the runner closed it
        if what is Report.PROGRESS:
            self._on_progress(*payload)
        elif what is Report.CALL:
            if job.gone is None and job.needs_met(self._layers()):
                callback, args = payload
                try:
                    callback(*args)
                except Exception as exc:  # noqa: BLE001 - never crash the viewer
                    job.cancel(f"showing its progress failed: {error_message(exc)}")
        else:
            self._finish(job, *payload)

    def _layers(self) -> Any:
        return None if self.viewer is None else self.viewer.layers

    def _on_progress(self, done: int, total: int) -> None:
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(min(done, max(total, 1)))
        bar = self.activity
        if bar is not None:
            if bar.total != total:
                bar.total = max(total, 0)
            bar.update(done - bar.n)

    def _end_ui(self, job: Job, text: str, value: int = 0) -> None:
        """Forget ``job`` and show its end (closing napari's bar may delete the runner)."""
        for stop in self._unwatch:
            stop()
        self._unwatch, self.job = [], None
        bar, self.activity = self.activity, None
        if bar is not None:
            bar.close()
        if qt_alive(self):
            self.cancel_button.setEnabled(False)
            self.bar.setRange(0, 1)
            self.bar.setValue(value)
            self.bar.setVisible(False)  # the status line says how it ended
            self.cancel_button.setVisible(False)
            self.status.setText(text)

    def _finish(self, job: Job, ok: bool, value: Any) -> None:
        from napari_segeval._cancel import Cancelled

        name = job.name
        if job.gone is None and not job.needs_met(self._layers()):
            job.gone = "a layer it needs was removed"
        if job.gone is not None:
            text = f"{name} dropped: {job.gone}"
            self._end_ui(job, text)
            self._emit_done(name, Outcome.DROPPED)
            if self.notify:
                _notify_info(text)
        elif ok:
            self._end_ui(job, f"{name}: done", value=1)
            if self._on_done is not None:
                try:
                    self._on_done(value)
                except Exception as exc:  # noqa: BLE001 - show it, never crash the viewer
                    self._failed(name, exc)
                    return
            self._emit_done(name, Outcome.OK)
        elif isinstance(value, Cancelled):
            self._end_ui(job, f"{name}: cancelled")
            self._emit_done(name, Outcome.CANCELLED)
        else:
            self._end_ui(job, "")
            self._failed(name, value)

    def _failed(self, name: str, exc: BaseException) -> None:
        self.last_error = error_message(exc)
        if qt_alive(self):  # an on_done that failed may have closed the panel
            self.bar.setValue(0)
            self.status.setText(f"{name} failed: {self.last_error}")
        self._emit_done(name, Outcome.ERROR)
        show_error(f"{name} failed: {self.last_error}")

    def _emit_done(self, name: str, outcome: Outcome) -> None:
        """``job_done``, unless the runner went meanwhile (napari processes events when it
        shows a notification: a closing window may delete its panels then)."""
        if qt_alive(self):
            self.job_done.emit(name, outcome.value)


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
