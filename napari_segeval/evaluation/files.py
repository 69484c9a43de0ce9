"""Prediction files of a results folder: ``DIR/predictions/<safe case id>/<safe key>.<ext>``.

Workers encode them (:func:`encode_arrays`); the folder's one writer writes them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from napari_segeval.evaluation.keys import IMAGE_KINDS, PredictionKey, is_image_key
from napari_segeval.evaluation.store import case_filename

#: Folder of the saved predictions inside a results folder.
PREDICTIONS = "predictions"


def relative_path(case_id: str, key: str | PredictionKey, ext: str) -> str:
    """``predictions/<safe case>/<safe key><ext>`` (POSIX separators, relative to DIR)."""
    return f"{PREDICTIONS}/{case_filename(case_id)}/{case_filename(str(key))}{ext}"


def encode_arrays(case_id: str, arrays) -> dict[str, tuple[str, bytes]]:
    """A case's CaseArrays as ``{key: (relative path, bytes)}``, in the source's format."""
    from napari_segeval.io import write_image, write_labels
    from napari_segeval.io._formats import output_formats

    label_ext, image_ext = output_formats(arrays.source, arrays.axes)
    out: dict[str, tuple[str, bytes]] = {}
    with tempfile.TemporaryDirectory(prefix="segeval-files-") as tmp:
        for key, array in arrays.arrays.items():
            image = is_image_key(key)
            rel = relative_path(case_id, key, image_ext if image else label_ext)
            path = Path(tmp) / Path(rel).name
            geometry = arrays.geometry
            if image and arrays.axes == "czyx" and np.ndim(array) == geometry.ndim + 1:
                geometry = geometry.stacked()  # channels first: a 4D file, as MSD's
            (write_image if image else write_labels)(path, array, geometry)
            out[key] = (rel, path.read_bytes())
            path.unlink()
    return out


__all__ = ["IMAGE_KINDS", "PREDICTIONS", "encode_arrays", "is_image_key", "relative_path"]
