"""Fetch catalogue checkpoints once and check them: the one way a model downloads.

:func:`pull` uses ``huggingface_hub`` (extra ``models``) at the pinned revision; a failure
leaves nothing in the cache and ends in one line.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from napari_segeval._atomic import atomic_write_text
from napari_segeval._cancel import Cancelled, check_cancel
from napari_segeval._errors import MissingDependencyError, ReadError, SegEvalError, WriteError
from napari_segeval.models._cache import (
    SHA256,
    cache_dir,
    endpoint,
    hashed,
    local_path,
    offline,
    record_path,
    recorded_sha256,
    repo_folder,
    snapshot_path,
    verify,
)
from napari_segeval.models.catalogue import CatalogueEntry, get, size_text, url

#: Seconds to wait for the hub's metadata answer.
METADATA_TIMEOUT = 10.0
#: Errors of a cache folder that cannot be written (read-only, full, over quota).
_CACHE_ERRNOS = {
    getattr(errno, n) for n in ("ENOSPC", "EROFS", "EACCES", "EPERM", "EDQUOT") if hasattr(errno, n)
}


class HubUnavailable(SegEvalError):
    """The hub cannot be used (offline, unreachable, or not answering as a hub)."""


def fetch_by_hand(entry: CatalogueEntry, reason: str) -> HubUnavailable:
    """The one line that says which file to fetch and where to put it."""
    where = snapshot_path(entry)
    if entry.sha256:
        put = f"put it at {where} (checked against SHA-256 {entry.sha256})"
    else:
        put = (
            f"pass it with --model {entry.architecture} --checkpoint FILE (no SHA-256 of it "
            f"is on record to check a copy put in the cache)"
        )
    return HubUnavailable(
        f"{reason}: fetch {url(entry, endpoint())} "
        f"({size_text(entry.size)}) on a connected machine and {put}"
    )


def _metadata(hub: Any, entry: CatalogueEntry) -> tuple[str, int | None]:
    """``(sha256, size)`` the hub publishes for the entry's file at its revision."""
    address = hub.hf_hub_url(
        entry.repo_id, entry.filename, revision=entry.revision, endpoint=endpoint()
    )
    try:
        meta = hub.get_hf_file_metadata(address, timeout=METADATA_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - the network layer raises many types
        raise _unreachable(entry, exc) from None
    if not meta.commit_hash:
        raise fetch_by_hand(
            entry,
            f"{endpoint()} does not answer as a Hugging Face hub (no "
            "X-Repo-Commit header; a proxy in the way?)",
        )
    sha = (meta.etag or "").strip('"').lower()
    if not SHA256.match(sha):
        raise ReadError(
            f"{address}: the hub publishes no SHA-256 for this file (ETag "
            f"{meta.etag!r}): refused, it could not be checked"
        )
    if meta.commit_hash != entry.revision:
        raise ReadError(
            f"{address}: the hub answered for revision {meta.commit_hash}, "
            f"not {entry.revision}: refused"
        )
    if entry.sha256 and sha != entry.sha256:
        raise ReadError(
            f"{address}: the hub publishes SHA-256 {sha[:12]}..., the catalogue "
            f"expects {entry.sha256[:12]}...: refused"
        )
    return sha, meta.size


def _unreachable(entry: CatalogueEntry, exc: BaseException) -> SegEvalError:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    kind = type(exc).__name__
    if kind in (
        "RepositoryNotFoundError",
        "GatedRepoError",
        "RevisionNotFoundError",
        "EntryNotFoundError",
        "RemoteEntryNotFoundError",
    ):
        return ReadError(
            f"{url(entry, endpoint())}: the hub has no such file ({kind}, HTTP {status})"
        )
    return fetch_by_hand(entry, f"cannot reach the model hub at {endpoint()} ({_why(exc, 120)})")


def _why(exc: BaseException, width: int) -> str:
    """``HTTP status``, else the error's type and the first ``width`` characters of its text."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    first, kind = (str(exc).strip().splitlines() or [""])[0][:width], type(exc).__name__
    return f"HTTP {status}" if status else f"{kind}: {first}" if first else kind


def _check_room(folder: Path, need: int) -> None:
    """Refuse a cache folder that cannot be written or lacks room, before any byte."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise WriteError(
            f"{folder}: the model cache is not writable (set HF_HOME or "
            f"HF_HUB_CACHE to a writable folder)"
        )
    free = shutil.disk_usage(probe).free
    if free < need:
        raise WriteError(
            f"{folder}: the model cache has {size_text(free)} free, "
            f"{size_text(need)} are needed (free some space, or set HF_HOME or "
            f"HF_HUB_CACHE to another disk)"
        )


def _relay(hub: Any, progress: Callable[[int, int], None] | None, cancel: Any) -> type:
    """A silent ``huggingface_hub`` progress bar: bytes to ``progress``, ``cancel`` checked."""
    from huggingface_hub.utils import tqdm as base

    class Relay(base):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            self.done = int(kwargs.get("initial") or 0)
            self.size = int(kwargs.get("total") or 0)

        def update(self, n: float | None = 1) -> None:
            self.done += int(n or 0)
            check_cancel(cancel, "download")
            if progress is not None:
                progress(self.done, max(self.size, self.done))

    return Relay


def _places(entry: CatalogueEntry, sha: str) -> tuple[list[Path], list[Path]]:
    """The files and the folders (innermost first) a pull of the entry's blob ``sha`` makes."""
    repo = repo_folder(entry, cache_dir())
    locks, blobs, snap = cache_dir() / ".locks" / repo.name, repo / "blobs", snapshot_path(entry)
    folders = [snap.parent, repo / "snapshots", blobs, repo / "refs", repo, locks]
    return [snap, blobs / sha, locks / f"{sha}.lock"], folders


def _remove_new(entry: CatalogueEntry, sha: str, before: set[Path]) -> None:
    """Remove what a failed pull left of the entry's file (nothing that was there before)."""
    files, folders = _places(entry, sha)
    blobs = folders[2]
    files += list(blobs.glob(f"{sha}*.incomplete")) if blobs.is_dir() else []
    for path in files:
        if path not in before and (path.is_symlink() or path.exists()):
            path.unlink(missing_ok=True)
    for folder in folders:
        if folder not in before and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _download(hub: Any, entry: CatalogueEntry, progress: Any, cancel: Any) -> Path:
    """``hf_hub_download`` of the entry at its revision into :func:`cache_dir`."""
    import inspect

    options: dict[str, Any] = {
        "revision": entry.revision,
        "cache_dir": str(cache_dir()),
        "endpoint": endpoint(),
    }
    if "tqdm_class" in inspect.signature(hub.hf_hub_download).parameters:
        options["tqdm_class"] = _relay(hub, progress, cancel)
    try:
        got = hub.hf_hub_download(entry.repo_id, entry.filename, **options)
    except (Cancelled, KeyboardInterrupt, SegEvalError):
        raise
    except OSError as exc:
        if exc.errno in _CACHE_ERRNOS:
            raise WriteError(
                f"{cache_dir()}: cannot write the model cache ({exc.strerror}): "
                f"set HF_HOME or HF_HUB_CACHE to a writable folder with room"
            ) from exc
        raise _stopped(entry, exc) from None
    except Exception as exc:  # noqa: BLE001 - the network layer raises many types
        raise _stopped(entry, exc) from None
    return Path(got)


def _stopped(entry: CatalogueEntry, exc: BaseException) -> ReadError:
    """The one line for a download that started and did not finish (a short or cut file)."""
    return ReadError(
        f"{url(entry, endpoint())}: the download did not complete ({_why(exc, 160)}): nothing "
        f"was kept; run segeval models pull {entry.name} again"
    )


def pull(
    name: str, *, progress: Callable[[int, int], None] | None = None, cancel: Any = None
) -> dict:
    """Download the catalogue entry ``name`` once, check it, and return where it is.

    Parameters
    ----------
    name : str
        A name of :data:`~napari_segeval.models.catalogue.CATALOGUE` (any letter case).
    progress : callable, optional
        ``progress(bytes_done, bytes_total)`` while downloading.
    cancel : threading.Event, optional
        Set it to stop the download; nothing of the file stays in the cache.

    Returns
    -------
    dict
        ``name``, ``path``, ``sha256``, ``size``, ``revision``, ``repo_id``,
        ``downloaded`` (False when it was already here and checked) and ``replaced``
        (a cached copy failed its check and was downloaded again).

    Raises
    ------
    napari_segeval.SegEvalError
        One line each: unknown name (with the closest ones), offline or unreachable
        (:class:`HubUnavailable`: which file to fetch and where to put it), a hash
        that differs (:class:`~napari_segeval.ReadError`), a cache that cannot be
        written or lacks room (:class:`~napari_segeval.WriteError`).
    napari_segeval._cancel.Cancelled
        ``cancel`` was set.
    """
    entry = get(name)
    result = {
        "name": entry.name,
        "repo_id": entry.repo_id,
        "revision": entry.revision,
        "downloaded": False,
        "replaced": False,
    }
    here = local_path(entry)
    if here is not None:
        try:
            digest = verify(entry, here, cancel)
            return {**result, "path": str(here), "sha256": digest, "size": here.stat().st_size}
        except ReadError:
            result["replaced"] = True
            _remove_new(entry, recorded_sha256(entry, here) or "-", set())
    if offline():
        raise fetch_by_hand(entry, "offline (HF_HUB_OFFLINE is set)")
    try:
        import huggingface_hub as hub
    except ImportError as exc:
        raise MissingDependencyError("huggingface_hub", "models", "Pulling models") from exc
    _check_room(cache_dir(), entry.size + (64 << 20))
    sha, size = _metadata(hub, entry)
    files, folders = _places(entry, sha)
    before = {p for p in [*files, *folders] if p.is_symlink() or p.exists()}
    try:
        path = _download(hub, entry, progress, cancel)
        digest = hashed(path, cancel)
        if digest != sha:
            raise ReadError(
                f"{url(entry, endpoint())}: downloaded SHA-256 {digest[:12]}... is "
                f"not the published {sha[:12]}...: refused and removed"
            )
    except BaseException:
        _remove_new(entry, sha, before)
        raise
    try:  # what caches without symbolic links keep of the hub's hash (see recorded_sha256)
        record_path(entry).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(record_path(entry), digest + "\n", overwrite=True)
    except (OSError, WriteError):
        pass  # the blob's name records it wherever links work
    size = size or path.stat().st_size
    return {**result, "path": str(path), "sha256": digest, "size": size, "downloaded": True}
