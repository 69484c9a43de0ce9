"""Whole-buffer gzip decompression, with Intel ISA-L (``isal``) when it is installed.

Reading a compressed volume is mostly inflating it: a 300 x 512 x 512 float32
NIfTI is 314 MB to inflate, about 2 s with zlib on a 2 GHz core. ISA-L's igzip
does the same 1.5-2.5x faster and releases the GIL, so files read in threads
inflate in parallel. ``isal`` is a dependency on the platforms it has wheels for
(x86-64 and 64-bit ARM); elsewhere :mod:`gzip` is used, with the same results.

Both check the gzip trailer (CRC-32 and length), so a truncated or corrupt file
is an error, never a short array. On any error :func:`gunzip` inflates the file
again with :mod:`gzip`, whose messages say more ("Not a gzipped file", "CRC check
failed"). :func:`open_gzip` gives a stream for readers that parse as they
inflate (nibabel reads the header, then the voxels).
"""

from __future__ import annotations

import gzip

try:  # optional accelerator; see the module docstring
    from isal import igzip as _igzip
except ImportError:  # pragma: no cover - platforms without isal wheels
    _igzip = None  # type: ignore[assignment]  # (the module, or None without isal)


def backend() -> str:
    """Name of the inflater in use: ``"isal"`` or ``"zlib"``.

    Examples
    --------
    >>> backend() in ("isal", "zlib")
    True
    """
    return "zlib" if _igzip is None else "isal"


def open_gzip(path):
    """Open a gzip file for binary reading (ISA-L's ``IGzipFile`` when installed).

    Read it to the end to have its trailer checked.
    """
    return (gzip if _igzip is None else _igzip).open(path, "rb")


def gunzip(data: bytes) -> bytes:
    """Decompress a whole gzip file (all members), checking every trailer.

    Raises
    ------
    OSError, EOFError, zlib.error
        As :func:`gzip.decompress` does: not gzip, truncated, corrupt.

    Examples
    --------
    >>> gunzip(gzip.compress(b"abc" * 3))
    b'abcabcabc'
    >>> gunzip(gzip.compress(b"abc")[:-3])
    Traceback (most recent call last):
    ...
    EOFError: Compressed file ended before the end-of-stream marker was reached
    """
    if _igzip is not None:
        try:
            return _igzip.decompress(data)
        except Exception:  # noqa: BLE001, S110 - gzip below raises the clearer error
            pass
    return gzip.decompress(data)


__all__ = ["backend", "gunzip", "open_gzip"]
