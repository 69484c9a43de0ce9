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
    """The ``progress(done, total)`` callback for a long call: a :class:`tqdm.tqdm` bar
    (``options``) on a terminal ``stream`` (default stderr) unless not ``enabled``
    (``--json``, ``--no-progress``), else ``None``. The first call's ``done`` counts as
    already finished (resumed work), so the rate and ETA count only this run's work; the
    bar is drawn from the first call on and its line ended on exit."""
    stream = stream if stream is not None else sys.stderr
    if not enabled or not is_terminal(stream):
        yield None
        return
    from tqdm import tqdm

    bar: tqdm | None = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(
                total=int(total),
                initial=int(done),
                desc=label,
                unit=unit,
                file=stream,
                dynamic_ncols=True,
                leave=True,
                **options,
            )
        else:
            bar.total = int(total)
            bar.update(int(done) - bar.n)

    try:
        yield progress
    finally:
        if bar is not None:
            bar.close()
