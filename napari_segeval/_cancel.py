"""Cooperative cancellation: long functions take ``cancel`` (an Event or None) and call
:func:`check_cancel` between units of work; a set event raises :class:`Cancelled`.
"""

from __future__ import annotations

from typing import Any


class Cancelled(Exception):
    """Raised when a caller's cancel event is set while work is in progress."""


def check_cancel(cancel: Any, what: str = "operation") -> None:
    """Raise :class:`Cancelled` if ``cancel`` (anything with ``is_set()``, or None) is set."""
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"{what} cancelled")
