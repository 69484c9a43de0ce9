"""Quiet reads and one-line reasons.

Libraries print their own warnings while reading (ITK's ``WARNING: In ...`` blocks,
GDCM traces, pydicom and nibabel ``UserWarning`` s) before our one-line error or on
success. Every read goes through :func:`quiet`, which turns SimpleITK's global
warning display off (restored afterwards) and collects Python warnings instead of
printing them. :func:`reason` makes a library exception into one line without
exception class names or ITK source locations.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.RLock()
_DEPTH = [0, True]  # nesting depth, SimpleITK's display flag before the outermost quiet()
_LOGGERS = ("pydicom", "nibabel", "nibabel.global")


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


@contextmanager
def _native_stderr() -> Iterator[None]:
    """Swallow what C/C++ code prints on file descriptor 2 (MetaIO, libminc, GDCM)."""
    import os
    import sys
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
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

    Examples
    --------
    >>> import warnings
    >>> with quiet() as caught:
    ...     warnings.warn("pixdim[0] (qfac) should be 1")
    >>> caught
    ['pixdim[0] (qfac) should be 1']
    """
    out = [] if collected is None else collected
    with _LOCK:
        if _DEPTH[0] == 0:
            _DEPTH[1] = _sitk_display(False)
        _DEPTH[0] += 1
    levels = {}
    for name in _LOGGERS:
        lg = logging.getLogger(name)
        levels[name] = lg.level
        lg.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if native:
                    with _native_stderr():
                        yield out
                else:
                    yield out
            finally:
                out.extend(one_line(str(w.message)) for w in caught)
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        with _LOCK:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:
                _sitk_display(_DEPTH[1])


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
