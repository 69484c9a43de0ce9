"""Where pulled checkpoints are (``huggingface_hub``'s variables and layout), and the
SHA-256 checks before one is read. No network, no ``huggingface_hub`` import.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from napari_segeval._cancel import check_cancel
from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.models.catalogue import CatalogueEntry, get, size_text

SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TRUE = ("1", "on", "yes", "true")
#: Bytes read at a time when hashing.
_CHUNK = 8 << 20
#: ``(path, size, mtime_ns) -> sha256`` of files checked in this process.
VERIFIED: dict[tuple[str, int, int], str] = {}


def cache_dir(environ: Any = None) -> Path:
    """``huggingface_hub``'s cache folder, from ``environ`` (default ``os.environ``) as it is now.

    ``HF_HUB_CACHE`` (or ``HUGGINGFACE_HUB_CACHE``), else ``HF_HOME/hub``, else
    ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``.
    """
    env = os.environ if environ is None else environ
    direct = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if direct:
        return Path(os.path.expandvars(direct)).expanduser()
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(os.path.expandvars(home)).expanduser() / "hub"


def endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT``, else ``https://huggingface.co``."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set, now or when
    ``huggingface_hub`` was imported (it reads the variable once)."""
    env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    if env.strip().lower() in _TRUE:
        return True
    import sys

    constants = sys.modules.get("huggingface_hub.constants")
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def repo_folder(entry: CatalogueEntry, cache: Path | None = None) -> Path:
    """The cache folder of the entry's repository (``models--org--name``)."""
    return (cache or cache_dir()) / ("models--" + entry.repo_id.replace("/", "--"))


def snapshot_path(entry: CatalogueEntry, cache: Path | None = None) -> Path:
    """Where the entry's file is in the cache once pulled (its pinned revision's snapshot)."""
    return repo_folder(entry, cache) / "snapshots" / entry.revision / entry.filename


def local_path(entry: CatalogueEntry, cache: Path | None = None) -> Path | None:
    """The entry's file in the cache, or None when it is not there (nothing is hashed)."""
    path = snapshot_path(entry, cache)
    return path if path.is_file() else None


def sha256_file(path: str | Path, cancel: Any = None) -> str:
    """The SHA-256 of a file, read in 8 MiB blocks (``cancel`` checked between them)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            check_cancel(cancel, "checking the download")
            digest.update(block)
    return digest.hexdigest()


def hashed(path: str | Path, cancel: Any = None) -> str:
    """:func:`sha256_file` of ``path``, once per path, size and mtime in this process."""
    st = Path(path).stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    digest = VERIFIED.get(key) or sha256_file(path, cancel)
    VERIFIED[key] = digest
    return digest


def record_path(entry: CatalogueEntry, cache: Path | None = None) -> Path:
    """Where :func:`pull` records the SHA-256 it checked (a folder the hub's tools ignore)."""
    folder = repo_folder(entry, cache) / ".napari-segeval" / entry.revision
    return folder / f"{entry.filename}.sha256"


def recorded_sha256(entry: CatalogueEntry, path: Path) -> str | None:
    """The hub's SHA-256 of a cached file: the name of the blob it links to, else what
    :func:`pull` recorded (caches without symbolic links copy the blob)."""
    if path.is_symlink():
        name = Path(os.path.realpath(path)).name
        if SHA256.match(name):
            return name
    try:
        text = record_path(entry).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if SHA256.match(text) else None


def verify(entry: CatalogueEntry, path: Path, cancel: Any = None) -> str:
    """Check a cached file against the catalogue's SHA-256 and the hub's; return it."""
    expected = [h for h in (entry.sha256, recorded_sha256(entry, path)) if h]
    if not expected:
        raise ReadError(
            f"{path}: no published SHA-256 on record to check this {entry.name} "
            f"file against (placed by hand?): run segeval models pull "
            f"{entry.name} online, or pass the file with --checkpoint"
        )
    digest = hashed(path, cancel)
    if any(digest != h for h in expected):
        raise ReadError(
            f"{path}: SHA-256 {digest[:12]}... is not the published "
            f"{expected[0][:12]}... of {entry.filename} ({path.stat().st_size} bytes; "
            f"truncated or altered): run segeval models pull {entry.name} to "
            f"replace it"
        )
    return digest


def checkpoint(name: str) -> Path:
    """The verified local file of the catalogue entry ``name``; never a download."""
    entry = get(name)
    path = local_path(entry)
    if path is None:
        raise SegEvalError(
            f"{entry.name} is not here: segeval models pull {entry.name} "
            f"({size_text(entry.size)}), or pass a file with --checkpoint"
        )
    verify(entry, path)
    return path


def published_twin(path: Any) -> CatalogueEntry | None:
    """The catalogue entry whose published file ``path`` is (same size and SHA-256), or None."""
    from napari_segeval.models.catalogue import CATALOGUE

    try:
        path = Path(path)
        size = path.stat().st_size
    except (OSError, TypeError, ValueError):
        return None
    same = [e for e in CATALOGUE.values() if e.sha256 and e.size == size]
    digest = hashed(path) if same else None
    return next((e for e in same if e.sha256 == digest), None)
