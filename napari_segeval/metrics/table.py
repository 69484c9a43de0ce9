"""One row of metrics per structure: the confusion matrix once, surfaces per structure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from napari_segeval._names import unnamed_structures
from napari_segeval.metrics.catalog import STRUCTURE_METRICS
from napari_segeval.metrics.overlap import (
    confusion_and_boxes,
    confusion_matrix,
    overlap_from_confusion,
)
from napari_segeval.metrics.surface import surface_metrics

#: Keys of one structure row, in order: the one definition, used by
#: :func:`structure_table` and by ``segeval metrics/propagate/segment --json``.
ROW_KEYS: tuple[str, ...] = ("label", "name", *(m.name for m in STRUCTURE_METRICS))


def structure_table(
    reference: np.ndarray,
    prediction: np.ndarray,
    spacing: Sequence[float],
    *,
    structures: Mapping[int, str] | None = None,
    tolerance_mm: float = 2.0,
    empty: str = "one",
    surface: bool = True,
) -> list[dict]:
    """Per-structure overlap and surface metrics of two label maps.

    Parameters
    ----------
    reference, prediction : numpy.ndarray
        Integer label maps of one shape (2D or 3D for surface metrics).
    spacing : sequence of float
        Voxel spacing in mm per array axis.
    structures : mapping of int to str, optional
        Labels to report with their names; default every non-zero label present
        in either map, named ``label_<id>``.
    tolerance_mm : float
        NSD tolerance in mm.
    empty : {"one", "nan", "zero"}
        Convention for a structure absent from both maps (see
        :func:`~napari_segeval.metrics.overlap.overlap_from_confusion` and
        :func:`~napari_segeval.metrics.surface.surface_metrics`).
    surface : bool
        Compute hd, hd95, assd and nsd (on masks cropped to the bounding box of
        both plus a one-voxel margin); when False those are NaN.

    Returns
    -------
    list of dict
        One row per structure with keys ``label, name, dice, iou, precision,
        recall, hd, hd95, assd, nsd, volume_ref_ml, volume_pred_ml``.
    """
    reference = np.asarray(reference)
    prediction = np.asarray(prediction)
    n = None
    if structures is not None:
        labels = {int(k): str(v) for k, v in structures.items()}
        n = max(int(reference.max(initial=0)), int(prediction.max(initial=0)), *labels) + 1
    if surface:  # the boxes of the surface crops come from the counting pass
        cm, boxes = confusion_and_boxes(reference, prediction, n)
    else:
        cm, boxes = confusion_matrix(reference, prediction, n), {}
    if structures is None:
        present = np.flatnonzero((cm.sum(axis=0) + cm.sum(axis=1)) > 0)
        labels = unnamed_structures(int(v) for v in present)
    m = overlap_from_confusion(cm, spacing, empty=empty, include_background=True)
    boxes = {k: _grown(b, reference.shape) for k, b in boxes.items()}
    if surface and 0 in labels:
        boxes[0] = tuple(slice(0, n) for n in reference.shape)
    rows = []
    for label, name in sorted(labels.items()):
        row = {"label": label, "name": name}
        for key in ("dice", "iou", "precision", "recall"):
            row[key] = float(m[key][label])
        row.update(dict.fromkeys(("hd", "hd95", "assd", "nsd"), float("nan")))
        if surface:
            box = boxes.get(label)
            if box is None:
                z = np.zeros((1,) * reference.ndim, bool)
                row.update(surface_metrics(z, z, spacing, tolerance_mm=tolerance_mm, empty=empty))
            else:
                ref_m = reference[box] == label
                pred_m = prediction[box] == label
                row.update(
                    surface_metrics(ref_m, pred_m, spacing, tolerance_mm=tolerance_mm, empty=empty)
                )
        row["volume_ref_ml"] = float(m["volume_ref_ml"][label])
        row["volume_pred_ml"] = float(m["volume_pred_ml"][label])
        rows.append({k: row[k] for k in ROW_KEYS})
    return rows


def _grown(box: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """``box`` grown by one voxel on every side, within ``shape`` (room for the surface)."""
    return tuple(slice(max(b.start - 1, 0), min(b.stop + 1, n)) for b, n in zip(box, shape))


__all__ = ["ROW_KEYS", "structure_table"]
