"""Where the package keeps its user cache (sample data, converted encoders)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache(name: str) -> Path:
    """The package's user cache folder ``name`` (under ``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "napari-segeval" / name
