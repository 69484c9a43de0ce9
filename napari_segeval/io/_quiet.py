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
def quiet(collected: list[str] | None = None) -> Iterator[list[str]]:
    """Silence library warnings for the duration of a read.

    Python warnings raised inside are appended (as one-line text) to ``collected``
    (a new list when None), which the context yields. SimpleITK's display is switched
    only when SimpleITK is already imported: import it before entering.

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
    r"(^(sitk::)?ERROR:\s*)|(^itk::\S+ \(0x[0-9a-f]+\):\s*)",
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
    """
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if isinstance(exc, KeyError) and lines:
        lines = [f"missing element {lines[-1]}"]
    text = ""
    for ln in reversed(lines):  # ITK puts the useful sentence last
        ln = _ITK_NOISE.sub("", ln).strip()
        if ln:
            text = ln
            break
    text = re.sub(r"\b[A-Z][A-Za-z]*(Error|Exception|Warning):\s*", "", text)
    return one_line(text) or default
