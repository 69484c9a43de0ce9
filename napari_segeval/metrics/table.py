"""One row of metrics per structure (the confusion matrix once, surfaces per structure), and
which structures of a case are scored: one rule for ``segeval metrics``, the protocols and
the uncertainty features.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from napari_segeval._names import unnamed_structures
from napari_segeval.metrics.catalog import STRUCTURE_METRICS
from napari_segeval.metrics.overlap import confusion_and_boxes, overlap_from_confusion
from napari_segeval.metrics.surface import surface_metrics

#: Keys of one structure row, in order: the one definition, used by
#: :func:`structure_table` and by ``segeval metrics/propagate/segment --json``.
ROW_KEYS: tuple[str, ...] = ("label", "name", *(m.name for m in STRUCTURE_METRICS))


def structures_to_score(names: Mapping[int, str] | None, *label_maps: np.ndarray) -> dict[int, str]:
    """Label id -> name of every structure to score: ``names``, then the unnamed ids present.

    Parameters
    ----------
    names : mapping of int to str, optional
        The structures something names (a dataset.json's labels, a colour table); all
        are scored, present or not (absent, not forgotten).
    *label_maps : numpy.ndarray
        The label maps the ids are looked for in (the reference; for two maps, both).

    Returns
    -------
    dict of int to str
        ``names`` in their order, then every non-zero id of the maps that ``names``
        leaves out, ascending, as ``"label N"``.
    """
    out = {int(k): str(v) for k, v in (names or {}).items()}
    present: set[int] = set()
    for m in label_maps:
        present.update(int(v) for v in np.unique(np.asarray(m)))
    out.update({k: v for k, v in unnamed_structures(sorted(present)).items() if k not in out})
    return out


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
        Compute hd, hd95, assd and nsd (on crops to the box of both plus one voxel);
        when False those are NaN.

    Returns
    -------
    list of dict
        One row per structure with keys ``label, name, dice, iou, precision,
        recall, hd, hd95, assd, nsd, volume_ref_ml, volume_pred_ml``.
    """
    reference, prediction = np.asarray(reference), np.asarray(prediction)
    n = None
    if structures is not None:
        labels = {int(k): str(v) for k, v in structures.items()}
        n = max(int(reference.max(initial=0)), int(prediction.max(initial=0)), *labels) + 1
    # the boxes of the surface crops come from the counting pass
    cm, boxes = confusion_and_boxes(reference, prediction, n, boxes=surface)
    if structures is None:
        present = np.flatnonzero((cm.sum(axis=0) + cm.sum(axis=1)) > 0)
        labels = unnamed_structures(int(v) for v in present)
    m = overlap_from_confusion(cm, spacing, empty=empty, include_background=True)
    boxes = {k: _grown(b, reference.shape) for k, b in boxes.items()}
    if surface and 0 in labels:
        boxes[0] = tuple(slice(0, n) for n in reference.shape)
    rows = []
    for label, name in sorted(labels.items()):
        row: dict = {"label": label, "name": name}
        row.update({k: float(m[k][label]) for k in ROW_KEYS if k in m})  # overlap, volumes
        if surface:  # a structure in neither map: an empty crop of one voxel
            box = boxes.get(label, (slice(0, 1),) * reference.ndim)
            masks = (reference[box] == label, prediction[box] == label)
            row.update(surface_metrics(*masks, spacing, tolerance_mm=tolerance_mm, empty=empty))
        rows.append({k: row.get(k, math.nan) for k in ROW_KEYS})
    return rows


def _grown(box: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """``box`` grown by one voxel on every side, within ``shape`` (room for the surface)."""
    return tuple(slice(max(b.start - 1, 0), min(b.stop + 1, n)) for b, n in zip(box, shape))


__all__ = ["ROW_KEYS", "structure_table", "structures_to_score"]
