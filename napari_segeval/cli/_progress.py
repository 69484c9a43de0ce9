"""The command line's one terminal progress bar (tqdm on stderr, with rate and ETA).

Drawn only on a terminal and never with ``--json`` (stdout then carries one JSON
object, and batch logs stay free of carriage returns).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

ProgressFn = Callable[[int, int], None]


class TerminalProgress:
    """A ``progress(done, total)`` callback drawing a tqdm bar on ``stream``.

    The first call's ``done`` counts as already finished (resumed work), so the rate and
    ETA count only this run's work. ``options`` go to :class:`tqdm.tqdm`.
    """

    def __init__(
        self, label: str, unit: str = "it", stream: TextIO | None = None, **options: Any
    ) -> None:
        file = stream if stream is not None else sys.stderr
        self.options = {"desc": label, "unit": unit, "file": file, **options}
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        done, total = int(done), int(total)
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total, initial=done, dynamic_ncols=True, leave=True, **self.options
            )
            return
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        """Draw the final state and end the line (nothing when never called)."""
        if self.bar is not None:
            self.bar.close()


def is_terminal(stream: Any) -> bool:
    """True when ``stream`` is an interactive terminal."""
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
    """The ``progress`` callback for a long call: a bar on a terminal ``stream`` (default
    stderr) unless not ``enabled`` (``--json``, ``--no-progress``), else ``None``."""
    stream = stream if stream is not None else sys.stderr
    if not enabled or not is_terminal(stream):
        yield None
        return
    bar = TerminalProgress(label, unit, stream, **options)
    try:
        yield bar
    finally:
        bar.close()
