"""Quiet reads and one-line reasons.

Libraries print their own warnings while reading (ITK's ``WARNING: In ...`` blocks,
GDCM traces, pydicom and nibabel ``UserWarning`` s) before our one-line error or on
success. Every read goes through :func:`quiet`, which turns SimpleITK's global
warning display off (restored afterwards), collects Python warnings instead of
printing them, and puts back the C locale a library changed while reading (GDCM
sets ``LC_ALL`` to ``"C"``, after which Python reads text files as ASCII). :func:`reason` makes a library exception into one line without
exception class names or ITK source locations.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

_LOCK = threading.RLock()
_LOGGERS = ("pydicom", "nibabel", "nibabel.global")
_LOCAL = threading.local()  # .stack: this thread's open quiet() lists, innermost last


class _Shared:
    """Process-wide state of :func:`quiet`, switched by the first entrant and restored by
    the last one to leave, whichever thread that is (reads run in parallel threads)."""

    depth = 0  # open quiet() blocks, all threads
    native = 0  # open blocks that swallow file descriptor 2
    sitk = True  # SimpleITK's warning display before the first block
    levels: ClassVar[dict] = {}
    warnings_cm: Any = None
    show: Any = None  # warnings.showwarning before the first block
    stderr_fd: int | None = None
    locale: str | None = None  # C-level locale before the first block


def _show(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` while any quiet() is open: to this thread's innermost list."""
    stack = getattr(_LOCAL, "stack", None)
    if stack:
        stack[-1].append(one_line(str(message)))
    elif _Shared.show is not None:  # a thread that is not reading: shown as usual
        _Shared.show(message, category, filename, lineno, file, line)


def _sitk_display(on: bool | None) -> bool:
    """Set SimpleITK's global warning display (when loaded); return the old value."""
    import sys

    sitk = sys.modules.get("SimpleITK")
    if sitk is None:
        return True
    po = sitk.ProcessObject
    old = bool(po.GetGlobalWarningDisplay())
    if on is not None:
        po.SetGlobalWarningDisplay(on)
    return old


def _locale() -> str | None:
    import locale

    try:
        return locale.setlocale(locale.LC_ALL)  # a query: changes nothing
    except locale.Error:
        return None


def _enter(native: bool) -> None:
    with _LOCK:
        if _Shared.depth == 0:
            _Shared.locale = _locale()
            _Shared.sitk = _sitk_display(False)
            _Shared.levels = {n: logging.getLogger(n).level for n in _LOGGERS}
            for name in _LOGGERS:
                logging.getLogger(name).setLevel(logging.CRITICAL)
            _Shared.warnings_cm = warnings.catch_warnings()
            _Shared.warnings_cm.__enter__()
            warnings.simplefilter("always")
            _Shared.show, warnings.showwarning = warnings.showwarning, _show
        _Shared.depth += 1
        if native:
            if _Shared.native == 0:
                _Shared.stderr_fd = _swallow_stderr()
            _Shared.native += 1


def _leave(native: bool) -> None:
    with _LOCK:
        if native:
            _Shared.native -= 1
            if _Shared.native == 0 and _Shared.stderr_fd is not None:
                _restore_stderr(_Shared.stderr_fd)
                _Shared.stderr_fd = None
        _Shared.depth -= 1
        if _Shared.depth == 0:
            _Shared.warnings_cm.__exit__(None, None, None)  # filters and showwarning back
            _Shared.warnings_cm, _Shared.show = None, None
            for name, level in _Shared.levels.items():
                logging.getLogger(name).setLevel(level)
            _sitk_display(_Shared.sitk)
            if _Shared.locale is not None and _locale() != _Shared.locale:
                import locale  # GDCM's DICOM reading leaves LC_ALL at "C" (ASCII text I/O)

                locale.setlocale(locale.LC_ALL, _Shared.locale)


def _swallow_stderr() -> int | None:
    """Point file descriptor 2 at a temporary file; the saved descriptor (None: left alone)."""
    import os
    import sys
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        return None
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)  # fd 2 keeps the (deleted) file open until restored
    return saved


def _restore_stderr(saved: int) -> None:
    import os

    try:
        os.dup2(saved, 2)
    finally:
        os.close(saved)


@contextmanager
def quiet(collected: list[str] | None = None, native: bool = False) -> Iterator[list[str]]:
    """Silence library warnings for the duration of a read.

    Python warnings raised inside are appended (as one-line text) to ``collected``
    (a new list when None), which the context yields. SimpleITK's display is switched
    only when SimpleITK is already imported: import it before entering. With
    ``native``, what C/C++ libraries print to the standard error stream (ITK's MetaIO,
    libminc, GDCM) is swallowed too -- keep such blocks short, they hide every
    thread's standard error output.

    Safe in parallel threads: the process-wide switches (warning filters, logger
    levels, SimpleITK's display, file descriptor 2) are made by the first block
    to open and undone by the last one to close, and each thread's warnings go
    to its own innermost list. Warnings of threads not inside a block are shown
    as usual.

    Examples
    --------
    >>> import warnings
    >>> with quiet() as caught:
    ...     warnings.warn("pixdim[0] (qfac) should be 1")
    >>> caught
    ['pixdim[0] (qfac) should be 1']
    """
    out = [] if collected is None else collected
    stack = _LOCAL.__dict__.setdefault("stack", [])
    _enter(native)
    stack.append(out)
    try:
        yield out
    finally:
        stack.pop()
        _leave(native)


_ITK_NOISE = re.compile(
    r"^(Exception thrown in SimpleITK \S+:\s*)|(^\S+\.(cxx|hxx|h|cpp):\d+:\s*)|"
    r"(^(sitk::|ITK )?ERROR:\s*(\w+\(0x[0-9a-f]+\):\s*)?)|(^itk::\S+ \(0x[0-9a-f]+\):\s*)",
    re.IGNORECASE,
)


def one_line(text: str) -> str:
    """Collapse ``text`` to one line (whitespace runs become one space).

    Examples
    --------
    >>> one_line("a\\n  b\\tc ")
    'a b c'
    """
    return " ".join(str(text).split())


def reason(exc: BaseException, default: str = "the file is corrupt") -> str:
    """What went wrong, in one line, without exception class names or ITK locations.

    Examples
    --------
    >>> reason(ValueError("negative count"))
    'negative count'
    >>> reason(KeyError())
    'the file is corrupt'
    >>> msg = ("Exception thrown in SimpleITK ImageFileReader_Execute: /src/sitkImageReaderBase.cxx:97:"
    ...        "\\nsitk::ERROR: Unable to determine ImageIO reader for \\"/x.img\\"")
    >>> reason(RuntimeError(msg))
    'Unable to determine ImageIO reader for "/x.img"'
    >>> reason(RuntimeError("ITK ERROR: GDCMImageIO(0x55e3d0): Failed to change syntax"))
    'Failed to change syntax'
    """
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if isinstance(exc, KeyError) and lines:
        lines = [f"missing element {lines[-1]}"]
    text = ""
    for i in range(len(lines) - 1, -1, -1):  # ITK puts the useful sentence last
        ln = _ITK_NOISE.sub("", lines[i]).strip()
        if ln.startswith("Reason:") and i > 0:  # "File cannot be read: X\nReason: ..."
            ln = _ITK_NOISE.sub("", lines[i - 1]).strip() + " " + ln
        if ln:
            text = ln
            break
    text = re.sub(r"\b[A-Z][A-Za-z]*(Error|Exception|Warning):\s*", "", text)
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", text)
    return one_line(text) or default
