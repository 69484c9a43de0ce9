"""napari writer contribution: save a Labels layer with its source geometry.

The geometry comes from ``meta["metadata"]["geometry"]`` (set by this plugin's reader),
else from the layer's ``scale`` and ``translate``. Existing files are never overwritten.
"""

from __future__ import annotations

import numpy as np

from napari_segeval._errors import WriteError

EXTENSIONS = (".nii", ".nii.gz", ".mha", ".nrrd")


def _geometry(data: np.ndarray, meta: dict):
    from napari_segeval.io.case import Geometry

    stored = (meta.get("metadata") or {}).get("geometry")
    if stored:
        g = Geometry.from_dict(stored)
        if g.ndim == data.ndim:
            return g
    ndim = data.ndim
    scale = tuple(meta.get("scale") or (1.0,) * ndim)[-ndim:]
    translate = tuple(meta.get("translate") or (0.0,) * ndim)[-ndim:]
    return Geometry(scale, translate[::-1], tuple(np.eye(ndim).ravel()))


def write_labels_layer(path: str, data, meta: dict) -> list[str]:
    """Write one Labels layer (``meta``: its attributes) to a new ``.nii[.gz]``, ``.mha`` or
    ``.nrrd`` file; returns ``[path]``."""
    from napari_segeval.io import write_labels
    from napari_segeval.io._formats import suffix

    if suffix(path) not in EXTENSIONS:
        raise WriteError(f"{path}: labels can be saved as {', '.join(EXTENSIONS)}")
    arr = np.asarray(data)
    return [str(write_labels(path, arr, _geometry(arr, meta), overwrite=False))]
