"""Atomic file writes, the one way napari-segeval writes a file: a private temporary folder
beside the target, fsync, the mode ``open()`` gives (``0o666 & ~umask``; :mod:`tempfile`
alone gives ``0o600``), rename. Without ``overwrite=True`` an existing target is refused
(:class:`~napari_segeval.WriteError`), checked again at the rename.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from napari_segeval._errors import WriteError

_UMASK_LOCK = threading.Lock()
_TMP_PREFIX = ".segeval-tmp-"


def current_umask() -> int:
    """The process umask, read from ``/proc/self/status`` or by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        old = os.umask(0o022)
        os.umask(old)
    return old


def file_mode() -> int:
    """Mode of a newly written file: what ``open()`` gives, ``0o666 & ~umask``."""
    return 0o666 & ~current_umask()


def _exists_error(path: Path) -> WriteError:
    return WriteError(f"{path}: file exists; pass overwrite=True to replace it")


def _fsync(path: Path, *, required: bool = True) -> None:
    """fsync a file or (``required=False``: where possible, not on Windows) a folder."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        if required:
            raise


@contextlib.contextmanager
def _os_errors(target: Path) -> Iterator[None]:
    """Raise a file system failure while writing ``target`` as a WriteError."""
    try:
        yield
    except OSError as exc:
        raise WriteError(f"{target}: cannot write ({exc})") from exc


def _commit(tmp: Path, target: Path, overwrite: bool) -> None:
    """Rename ``tmp`` to ``target``; without ``overwrite`` never replace an existing file."""
    if overwrite:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)  # fails if target exists: no window for a clobber
    except FileExistsError:
        raise _exists_error(target) from None
    except OSError:  # no hard links on this file system: check, then rename
        if os.path.lexists(target):
            raise _exists_error(target) from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary path with the target's name to write by file name; commit it on success.

    Every file written beside it is moved next to the target (companions such as a ``.zraw``
    first); on an exception nothing is. WriteError: the target exists (without
    ``overwrite``), its folder is missing, the block wrote no file, or the file system failed.
    """
    target = Path(path)
    if not overwrite and os.path.lexists(target):
        raise _exists_error(target)
    if not target.parent.is_dir():
        raise WriteError(f"{target}: folder {target.parent} does not exist")
    with _os_errors(target):
        folder = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=target.parent))
    try:
        tmp = folder / target.name
        with _os_errors(target):
            yield tmp
        if not tmp.is_file():
            raise WriteError(f"{target}: the writer produced no file")
        parts = sorted((p for p in folder.iterdir() if p.is_file()), key=lambda p: p == tmp)
        mode = file_mode()
        with _os_errors(target):
            for part in parts:
                os.chmod(part, mode)
                _fsync(part)
            for part in parts:  # companion (data) files before the file that names them
                _commit(part, target.parent / part.name, overwrite)
            _fsync(target.parent, required=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike, mode: str = "w", *, overwrite: bool = False, newline: str | None = None
) -> Iterator[IO]:
    """Open a temporary file (``mode`` "w", UTF-8, or "wb") to stream ``path``'s contents into;
    commit it on success (:func:`atomic_path`)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    text = mode == "w"
    with (
        atomic_path(path, overwrite=overwrite) as tmp,
        open(
            tmp, mode, encoding="utf-8" if text else None, newline=newline if text else None
        ) as fh,
    ):  # the file is closed (flushed) before atomic_path commits it
        yield fh


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, overwrite: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""
    with atomic_open(path, "wb", overwrite=overwrite) as fh:
        fh.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, *, overwrite: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8, no newline translation); returns the path."""
    with atomic_open(path, "w", overwrite=overwrite, newline="") as fh:
        fh.write(text)
    return Path(path)
