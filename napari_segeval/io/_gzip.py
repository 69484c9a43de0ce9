"""Whole-buffer gzip decompression with Intel ISA-L (``isal``, 1.5-2.5x zlib, GIL
released) when installed; on any error :mod:`gzip` retries, whose messages say more.
"""

from __future__ import annotations

import gzip

try:  # optional accelerator; see the module docstring
    from isal import igzip as _igzip
except ImportError:  # pragma: no cover - platforms without isal wheels
    _igzip = None  # type: ignore[assignment]  # (the module, or None without isal)


def backend() -> str:
    """Name of the inflater in use: ``"isal"`` or ``"zlib"``."""
    return "zlib" if _igzip is None else "isal"


def open_gzip(path):
    """Open a gzip file for binary reading; read it to the end to have its trailer checked."""
    return (gzip if _igzip is None else _igzip).open(path, "rb")


def gunzip(data: bytes) -> bytes:
    """Decompress a whole gzip file (all members), checking every trailer; raises as
    :func:`gzip.decompress` does (OSError, EOFError, zlib.error)."""
    if _igzip is not None:
        try:
            return _igzip.decompress(data)
        except Exception:  # noqa: BLE001, S110 - gzip below raises the clearer error
            pass
    return gzip.decompress(data)
