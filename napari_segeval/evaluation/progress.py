"""A one-line terminal progress bar with rate and ETA (no dependencies)."""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO


def format_eta(seconds: float) -> str:
    """``H:MM:SS`` for a number of seconds (``--:--`` when unknown).

    Examples
    --------
    >>> format_eta(3725), format_eta(float("nan"))
    ('1:02:05', '--:--')
    """
    if not math.isfinite(seconds) or seconds < 0:
        return "--:--"
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class ProgressLine:
    """Progress of ``total`` cases, ``done`` of them finished before this run started.

    The rate (cases per minute) and ETA count only cases finished in this run.
    On a terminal the line is redrawn in place; otherwise one line per update.

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> p = ProgressLine(4, done=1, stream=buf, clock=iter([0.0, 60.0]).__next__)
    >>> p.update(2, failed=1)
    >>> buf.getvalue().strip()
    'segeval: 2/4 cases (1 skipped, 1 failed) 1.0 cases/min ETA 0:02:00'
    """

    def __init__(self, total: int, done: int = 0, stream: TextIO | None = None,
                 clock=time.perf_counter, label: str = "segeval") -> None:
        self.total, self.skipped, self.label = int(total), int(done), label
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def rate(self, done: int) -> float:
        """Cases per minute finished in this run."""
        elapsed = self.clock() - self.start
        new = done - self.skipped
        return 60.0 * new / elapsed if elapsed > 0 and new > 0 else float("nan")

    def update(self, done: int, failed: int = 0) -> None:
        """Redraw for ``done`` finished cases (including skipped ones)."""
        r = self.rate(done)
        eta = (self.total - done) / r * 60.0 if r > 0 else float("nan")
        extra = [f"{self.skipped} skipped"] if self.skipped else []
        extra += [f"{failed} failed"] if failed else []
        note = f" ({', '.join(extra)})" if extra else ""
        rate = "-" if math.isnan(r) else f"{r:.1f}"
        line = f"{self.label}: {done}/{self.total} cases{note} {rate} cases/min ETA {format_eta(eta)}"
        self.stream.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the line on a terminal."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


__all__ = ["ProgressLine", "format_eta"]
