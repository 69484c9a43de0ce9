"""The command line's one terminal progress bar (tqdm on stderr, with rate and ETA).

Core functions report ``progress(done, total)``; every subcommand turns that
into a bar with :func:`progress_bar`. The bar is drawn only on a terminal and
never with ``--json`` (stdout then carries exactly one JSON object, and logs of
batch jobs stay free of carriage returns).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

ProgressFn = Callable[[int, int], None]


class TerminalProgress:
    """A ``progress(done, total)`` callback drawing a tqdm bar on ``stream``.

    The first call fixes the starting point: ``done`` counts as already finished
    (resumed work), so the rate and ETA count only work done in this run.

    Parameters
    ----------
    label : str
        Text before the bar (``"cases"``, ``"attack"``).
    unit : str
        Unit of ``done`` (``"case"``, ``"pass"``, ``"window"``).
    stream : file
        Where to draw (default ``sys.stderr``).
    **options
        More :class:`tqdm.tqdm` options (``mininterval`` ...).

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> bar = TerminalProgress("cases", "case", stream=buf, mininterval=0)
    >>> for done in (1, 2, 3, 4):
    ...     bar(done, 4)
    >>> bar.close()
    >>> last = buf.getvalue().split("\\r")[-1]
    >>> last.startswith("cases: 100%") and "4/4" in last
    True
    """

    def __init__(
        self, label: str, unit: str = "it", stream: TextIO | None = None, **options: Any
    ) -> None:
        self.label, self.unit = label, unit
        self.stream = stream if stream is not None else sys.stderr
        self.options = options
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        done, total = int(done), int(total)
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total,
                initial=done,
                desc=self.label,
                unit=self.unit,
                file=self.stream,
                dynamic_ncols=True,
                leave=True,
                **self.options,
            )
            return
        if total != self.bar.total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        """Draw the final state and end the line (nothing when never called)."""
        if self.bar is not None:
            self.bar.close()


def is_terminal(stream: Any) -> bool:
    """True when ``stream`` is an interactive terminal.

    Examples
    --------
    >>> import io
    >>> is_terminal(io.StringIO())
    False
    """
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


@contextlib.contextmanager
def progress_bar(
    label: str,
    unit: str = "it",
    *,
    enabled: bool = True,
    stream: TextIO | None = None,
    **options: Any,
) -> Iterator[ProgressFn | None]:
    """The ``progress`` callback for a long call: a bar on a terminal, else ``None``.

    Parameters
    ----------
    label, unit : str
        Text before the bar and the unit counted.
    enabled : bool
        False with ``--json`` (or ``--no-progress``): no bar at all.
    stream : file, optional
        Where to draw (default ``sys.stderr``); the bar is drawn only when it
        is a terminal.
    **options
        More :class:`tqdm.tqdm` options.

    Examples
    --------
    >>> import io
    >>> with progress_bar("attack", "pass", stream=io.StringIO()) as progress:
    ...     progress is None  # not a terminal
    True
    """
    stream = stream if stream is not None else sys.stderr
    if not enabled or not is_terminal(stream):
        yield None
        return
    bar = TerminalProgress(label, unit, stream, **options)
    try:
        yield bar
    finally:
        bar.close()


__all__ = ["ProgressFn", "TerminalProgress", "is_terminal", "progress_bar"]
