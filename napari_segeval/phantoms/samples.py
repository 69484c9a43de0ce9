"""Find the sample data: environment variable, the repository's folder, or a user cache.

The user cache is rebuilt when what it was built with changes (:data:`BUILT_WITH`:
whether PyAV could write the ``video`` sample's MP4); a sample needing a missing extra
says so in one line. Importing this module never imports torch, Qt or napari.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from napari_segeval._errors import MissingDependencyError, ReadError
from napari_segeval._paths import user_cache

#: Environment variable naming a sample folder (one holding ``index.json``).
ENV_VAR = "NAPARI_SEGEVAL_SAMPLES"
#: Keys of an ``index.json`` entry that name files.
FILE_PARTS: tuple[str, ...] = ("image", "labels")
#: Bump when the generated samples change, so stale caches are not reused.
SAMPLES_VERSION = 1
#: File of a generated cache recording what it was built with (``{"video": bool}``).
BUILT_WITH = ".built-with.json"
#: Samples that need an extra: ``name: (package, extra, what needs it)``.
NEEDS_EXTRA: dict[str, tuple[str, str, str]] = {
    "video": ("av", "video", "the 'video' sample (an MP4, written with PyAV)"),
}


def _repo_samples() -> Path:
    return Path(__file__).resolve().parents[2] / "sample_data"


def _can_write_video() -> bool:
    import importlib.util

    return importlib.util.find_spec("av") is not None


def _built_with(root: Path) -> dict:
    """What a generated cache was built with (caches from before the record: its index)."""
    try:
        return json.loads((root / BUILT_WITH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        try:
            return {"video": "video" in json.loads((root / "index.json").read_text("utf-8"))}
        except (OSError, ValueError):
            return {}


def _generate_into(final: Path) -> Path:
    """Generate the samples in a temporary sibling folder, then move it into place (an old
    cache at ``final`` is renamed aside only once the new one is complete)."""
    from napari_segeval.phantoms.make_samples import write_samples

    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".samples-", dir=final.parent))
    old = None
    try:
        video = _can_write_video()
        write_samples(tmp, video=video)
        (tmp / BUILT_WITH).write_text(json.dumps({"video": video}), encoding="utf-8")
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=".samples-old-", dir=final.parent))
            os.rename(final, old / "samples")
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "index.json").is_file():  # not a lost race: a real failure
                raise
    finally:
        for leftover in (tmp, old):
            if leftover is not None and leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)
    return final


def sample_root() -> Path:
    """Folder holding the sample data and its ``index.json``.

    Looks in order at ``$NAPARI_SEGEVAL_SAMPLES``, the repository's ``sample_data/`` (an
    editable install), then the user cache (``$XDG_CACHE_HOME`` or ``~/.cache``, under
    ``napari-segeval/samples-v1``), generating the samples there once if needed, and again
    when an extra they need has been installed since (:data:`BUILT_WITH`).

    Raises
    ------
    ReadError
        If ``$NAPARI_SEGEVAL_SAMPLES`` is set but holds no ``index.json``.

    Examples
    --------
    >>> (sample_root() / "index.json").is_file()
    True
    """
    env = os.environ.get(ENV_VAR)
    if env:
        root = Path(env).expanduser()
        if not (root / "index.json").is_file():
            raise ReadError(f"{ENV_VAR}={env}: no index.json in that folder")
        return root
    repo = _repo_samples()
    if (repo / "index.json").is_file():
        return repo
    cache = user_cache(f"samples-v{SAMPLES_VERSION}")
    if (cache / "index.json").is_file() and (
        _built_with(cache).get("video", False) or not _can_write_video()
    ):
        return cache
    return _generate_into(cache)


def load_index(root: Path | None = None) -> dict:
    """The parsed ``index.json`` of ``root`` (default :func:`sample_root`).

    Examples
    --------
    >>> "ct" in load_index()
    True
    """
    root = sample_root() if root is None else Path(root)
    path = root / "index.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReadError(f"{path}: cannot read the sample index ({exc})") from exc


def sample_path(name: str, part: str = "image") -> Path:
    """Path of one part (one of :data:`FILE_PARTS`) of a named sample.

    Entries that are a single path (such as ``"msd_task"``, a folder) are returned
    whatever ``part`` is.

    Raises
    ------
    KeyError
        If the sample or the part is not in ``index.json``.
    MissingDependencyError
        If the sample needs an extra that is not installed (:data:`NEEDS_EXTRA`).
    ReadError
        If the index names a file that is not on disk.

    Examples
    --------
    >>> sample_path("ct").name
    'ct_001.nii.gz'
    >>> sample_path("msd_task").name
    'Task90_AbdomenPhantom'
    """
    root = sample_root()
    index = load_index(root)
    entry = _entry(index, name)
    if isinstance(entry, dict):
        parts = [k for k in FILE_PARTS if isinstance(entry.get(k), str)]
        if part not in parts:
            raise KeyError(f"sample {name!r} has no file part {part!r}; parts: {', '.join(parts)}")
        entry = entry[part]
    path = root / entry
    if not path.exists():
        raise ReadError(f"{path}: listed in {root / 'index.json'} but missing")
    return path


def sample_info(name: str) -> dict:
    """The whole ``index.json`` entry of a sample (paths, structures, seed, ...).

    Examples
    --------
    >>> sample_info("skin")["structures"]
    {'1': 'lesion'}
    """
    entry = _entry(load_index(), name)
    return dict(entry) if isinstance(entry, dict) else {"path": entry}


def _entry(index: dict, name: str):
    if name not in index:
        if name in NEEDS_EXTRA:
            raise MissingDependencyError(*NEEDS_EXTRA[name])
        raise KeyError(f"no sample named {name!r}; available: {', '.join(sorted(index))}")
    return index[name]


__all__ = [
    "BUILT_WITH",
    "ENV_VAR",
    "NEEDS_EXTRA",
    "SAMPLES_VERSION",
    "load_index",
    "sample_info",
    "sample_path",
    "sample_root",
]
