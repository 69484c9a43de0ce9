"""The model hub, as the command line and the viewer use it: where pulled files are, pulling one.

A small public surface over :mod:`._cache` (where files are and how they are checked)
and :mod:`._hub` (the one way a checkpoint downloads): callers outside ``models/`` use
these names, never the private modules. Importing it imports neither torch nor
``huggingface_hub``.

Examples
--------
>>> from napari_segeval.models import catalogue
>>> cache_dir({"HF_HUB_CACHE": "/tmp/hub"}).as_posix()
'/tmp/hub'
>>> local_path(catalogue.CATALOGUE["sam2.1-tiny"], cache_dir({"HF_HUB_CACHE": "/nowhere"})) is None
True
"""

from __future__ import annotations

from napari_segeval.models._cache import cache_dir, endpoint, local_path
from napari_segeval.models._hub import pull

__all__ = ["cache_dir", "endpoint", "local_path", "pull"]
