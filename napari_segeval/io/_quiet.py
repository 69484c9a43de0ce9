"""Quiet reads (:func:`quiet`: library warnings collected, GDCM's locale change undone)
and one-line reasons (:func:`reason`).
"""

from __future__ import annotations

import locale
import logging
import os
import re
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from napari_segeval._errors import ReadError, SegEvalError

_LOCK = threading.RLock()
_LOGGERS = ("pydicom", "nibabel", "nibabel.global")
_LOCAL = threading.local()  # .stack: this thread's open quiet() lists, innermost last


class _Shared:
    """Process-wide state of :func:`quiet`: switched by the first entrant, restored by the last."""

    depth = 0  # open quiet() blocks, all threads
    native = 0  # open blocks that swallow file descriptor 2
    sitk: bool | None = None  # SimpleITK's display before we switched it (None: not switched)
    levels: ClassVar[dict] = {}
    show: Any = None  # warnings.showwarning before the first block
    stderr_fd: int | None = None
    locale: str | None = None  # C-level locale before the first block


#: The filter the first block puts in front (and the last one takes out): every
#: warning is shown, so repeated library warnings reach each read's list.
_ALWAYS = ("always", None, Warning, None, 0)


def _plain_show(message, category, filename, lineno, file=None, line=None) -> None:
    """What :mod:`warnings` prints by default (to ``file`` or standard error)."""
    out = file if file is not None else sys.stderr
    if out is not None:
        try:
            out.write(warnings.formatwarning(message, category, filename, lineno, line))
        except (OSError, ValueError):
            pass


def _show(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` inside quiet(): to this thread's list, others' to the previous one."""
    stack = getattr(_LOCAL, "stack", None)
    if stack:
        stack[-1].append(one_line(str(message)))
        return
    target = _Shared.show
    if target is None or target is _show:
        target = _plain_show
    target(message, category, filename, lineno, file, line)


def _sitk_display(on: bool | None) -> bool | None:
    """Set SimpleITK's global warning display (when loaded); the old value (None: not loaded)."""
    sitk = sys.modules.get("SimpleITK")
    if sitk is None:
        return None
    po = sitk.ProcessObject
    old = bool(po.GetGlobalWarningDisplay())
    if on is not None:
        po.SetGlobalWarningDisplay(on)
    return old


def _locale() -> str | None:
    try:
        return locale.setlocale(locale.LC_ALL)  # a query: changes nothing
    except locale.Error:
        return None


def _enter(native: bool) -> None:
    with _LOCK:
        if _Shared.depth == 0:
            _Shared.locale = _locale()
            _Shared.levels = {n: logging.getLogger(n).level for n in _LOGGERS}
            for name in _LOGGERS:
                logging.getLogger(name).setLevel(logging.CRITICAL)
            warnings.simplefilter("always")  # puts _ALWAYS in front
            saved = warnings.showwarning
            _Shared.show = None if saved is _show else saved
            warnings.showwarning = _show
        if _Shared.sitk is None:  # SimpleITK may be imported by a later block's thread
            _Shared.sitk = _sitk_display(False)
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
                try:
                    os.dup2(_Shared.stderr_fd, 2)
                finally:
                    os.close(_Shared.stderr_fd)
                _Shared.stderr_fd = None
        _Shared.depth -= 1
        if _Shared.depth:
            return
        if warnings.showwarning is _show:  # left alone if someone replaced it meanwhile
            warnings.showwarning = _Shared.show if _Shared.show is not None else _plain_show
        _Shared.show = None
        try:
            warnings.filters.remove(_ALWAYS)  # type: ignore[attr-defined]  # a list (typeshed: Sequence)
            getattr(warnings, "_filters_mutated", lambda: None)()  # CPython's cache invalidation
        except ValueError:
            pass
        for name, level in _Shared.levels.items():
            logging.getLogger(name).setLevel(level)
        if _Shared.sitk is not None:
            _sitk_display(_Shared.sitk)
            _Shared.sitk = None
        if _Shared.locale is not None and _locale() != _Shared.locale:
            # GDCM's DICOM reading leaves LC_ALL at "C" (ASCII text I/O)
            locale.setlocale(locale.LC_ALL, _Shared.locale)


def _swallow_stderr() -> int | None:
    """Point file descriptor 2 at a temporary file; the saved descriptor (None: left alone)."""
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        return None
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)  # fd 2 keeps the (deleted) file open until restored
    except OSError:  # no room for a temporary file: C libraries may print, nothing breaks
        os.close(saved)
        return None
    return saved


@contextmanager
def quiet(collected: list[str] | None = None, native: bool = False) -> Iterator[list[str]]:
    """Collect the warnings raised inside as one-line texts (yielded; ``collected`` if given).

    ``native`` also swallows what C/C++ libraries print to stderr (every thread's: keep
    such blocks short). Thread-safe: the first block to open switches, the last restores.
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


@contextmanager
def one_line_errors(message: str, error: type[SegEvalError] = ReadError) -> Iterator[None]:
    """Turn what a library raises inside into ``error("message (reason)")``; SegEvalError passes."""
    try:
        yield
    except SegEvalError:
        raise
    except Exception as exc:  # libraries raise many kinds (OSError, ValueError, RuntimeError ...)
        raise error(f"{message} ({reason(exc)})") from exc


_ITK_NOISE = re.compile(
    r"^(Exception thrown in SimpleITK \S+:\s*)|(^\S+\.(cxx|hxx|h|cpp):\d+:\s*)|"
    r"(^(sitk::|ITK )?ERROR:\s*(\w+\(0x[0-9a-f]+\):\s*)?)|(^itk::\S+ \(0x[0-9a-f]+\):\s*)",
    re.IGNORECASE,
)


def one_line(text: str) -> str:
    """Collapse ``text`` to one line (whitespace runs become one space)."""
    return " ".join(str(text).split())


def reason(exc: BaseException, default: str = "the file is corrupt") -> str:
    """What went wrong, in one line, without exception class names or ITK locations."""
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
