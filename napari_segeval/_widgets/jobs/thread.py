"""One job in a worker thread: cancel, join, and what it reports (no Qt here).

A :class:`Job` runs ``fn(*args, progress=..., cancel=..., **kwargs)`` in a plain,
non-daemon :class:`threading.Thread`: Python waits for it before shutting
down, so a process never finalises Qt or torch under a running job. What the
worker reports goes through ``post(what, payload)``, a function the caller
gives (:class:`~napari_segeval._widgets.jobs.worker.JobRunner` gives one that
emits a queued Qt signal); once the job is closed nothing more is posted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

#: Longest wait (seconds) for a cancelled job's thread when its panel or viewer closes.
JOIN_TIMEOUT_S = 10.0

#: Jobs whose threads run (closed when the application quits: :func:`close_all_jobs`).
_RUNNING: set[Job] = set()


class Report(str, Enum):
    """What a job posts, with its payload: ``post(what, payload)`` (see :class:`Job`)."""

    PROGRESS = "progress"  # (done, total)
    CALL = "call"  # (callback, args): a call of a ``relay`` callable
    END = "end"  # (True, result) or (False, exception), last


Post = Callable[[Report, Any], None]


class Job:
    """One run of a core function in a worker thread.

    Reports reach ``post`` as ``(Report.PROGRESS, (done, total))``,
    ``(Report.CALL, (callback, args))`` for each call of a ``relay`` callable, and
    last ``(Report.END, (True, result))`` or ``(Report.END, (False, exception))``.

    Attributes
    ----------
    name : str
    needs : tuple of napari layers
        Layers the job reads or writes into: removing one cancels it.
    cancel_event : threading.Event
        Passed to the core function as ``cancel``.
    gone : str or None
        Why the job's result is no longer wanted (a layer removed, its panel
        closed); None while it is.
    closed : bool
        Its owner closed it: nothing it reports is posted any more.

    Examples
    --------
    >>> from napari_segeval._cancel import check_cancel
    >>> def count(n, *, progress, cancel, show):
    ...     for i in range(n):
    ...         check_cancel(cancel, "count")
    ...         show(i)
    ...         progress(i + 1, n)
    ...     return n
    >>> reports = []
    >>> job = Job("count")
    >>> job.start(count, (2,), {}, lambda what, payload: reports.append((what, payload)),
    ...           relay={"show": print})
    >>> job.thread.join(10)
    >>> [what.value for what, _ in reports], reports[-1]
    (['call', 'progress', 'call', 'progress', 'end'], (<Report.END: 'end'>, (True, 2)))
    >>> job.alive
    False
    """

    def __init__(self, name: str, needs: Iterable[Any] = ()) -> None:
        self.name = name
        self.needs = tuple(needs)
        self.cancel_event = threading.Event()
        self.gone: str | None = None
        self.closed = False
        self.thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"Job({self.name!r}, alive={self.alive}, gone={self.gone!r})"

    @property
    def alive(self) -> bool:
        """True while the worker thread runs."""
        return self.thread is not None and self.thread.is_alive()

    def start(
        self,
        fn: Callable[..., Any],
        args: tuple,
        kwargs: dict,
        post: Post,
        relay: dict[str, Callable[..., None]] | None = None,
    ) -> None:
        """Run ``fn`` in a new thread; its reports go to ``post`` (see the class)."""

        def guarded(what: Report, payload: Any) -> None:
            if self.closed:
                return
            try:
                post(what, payload)
            except RuntimeError:  # the receiver is gone (Qt is shutting down)
                self.closed = True

        calls = {
            key: (lambda *a, cb=cb: guarded(Report.CALL, (cb, a)))
            for key, cb in (relay or {}).items()
        }
        self.thread = threading.Thread(
            target=self._work,
            args=(fn, args, {**kwargs, **calls}, guarded),
            name=f"segeval {self.name}",
        )
        _RUNNING.add(self)
        self.thread.start()

    def _work(self, fn: Callable[..., Any], args: tuple, kwargs: dict, post: Post) -> None:
        """The worker thread: run ``fn`` and post its end; never raises."""
        try:
            result = fn(
                *args,
                progress=lambda done, total: post(Report.PROGRESS, (int(done), int(total))),
                cancel=self.cancel_event,
                **kwargs,
            )
            post(Report.END, (True, result))
        except BaseException as exc:  # noqa: BLE001 - every end is reported, to the owner
            post(Report.END, (False, exc))
        finally:
            _RUNNING.discard(self)

    def cancel(self, reason: str | None = None) -> None:
        """Ask the job to stop; with ``reason``, its result is no longer wanted."""
        if reason is not None and self.gone is None:
            self.gone = reason
        self.cancel_event.set()

    def close(self, reason: str, timeout: float = JOIN_TIMEOUT_S) -> bool:
        """Cancel, post nothing more, and join the thread for at most ``timeout`` s.

        Returns True when the thread has ended.
        """
        self.closed = True
        self.cancel(reason)
        _RUNNING.discard(self)
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout)
        return not self.alive

    def needs_met(self, layers: Any) -> bool:
        """True when every layer in ``needs`` is in ``layers`` (a viewer's layer list)."""
        return layers is None or all(layer in layers for layer in self.needs)


def close_all_jobs(timeout: float = JOIN_TIMEOUT_S) -> None:
    """Close every running job (the application quits): cancel, then join each."""
    for job in list(_RUNNING):
        job.close("napari is quitting", timeout)
