"""Cooperative cancellation shared by long-running core functions.

Long functions take ``cancel: threading.Event | None`` and call
:func:`check_cancel` between units of work (slices, frames, patches). A set
event raises :class:`Cancelled`, which callers (widgets, the CLI) catch to stop
quietly. Nothing is written when a function is cancelled.
"""

from __future__ import annotations

from typing import Any


class Cancelled(Exception):
    """Raised when a caller's cancel event is set while work is in progress."""


def check_cancel(cancel: Any, what: str = "operation") -> None:
    """Raise :class:`Cancelled` if ``cancel`` (an Event or ``None``) is set.

    Any object with an ``is_set()`` method works.

    Examples
    --------
    >>> import threading
    >>> ev = threading.Event()
    >>> check_cancel(ev)
    >>> ev.set()
    >>> check_cancel(ev, "propagation")
    Traceback (most recent call last):
    ...
    napari_segeval._cancel.Cancelled: propagation cancelled
    """
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"{what} cancelled")
