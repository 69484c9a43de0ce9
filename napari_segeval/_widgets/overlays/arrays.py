"""Small pure-numpy helpers behind the viewer panels (no Qt, no napari).

They live beside the panels that use them, yet importing this module loads
neither Qt, napari nor magicgui (the ``__init__.py`` of ``napari_segeval._widgets``
and of its ``overlays`` import nothing), so they are tested and reused without a display.

* :func:`error_overlay` - false positives / false negatives of one structure as a
  label map (updated in place for the slices an edit touched).
* :func:`touched_slices` - the slice range along axis 0 that a napari paint event's
  history atoms changed (duck-typed, so napari is not imported).
* :func:`focus_slice` - where to look (the worst slice is
  :func:`napari_segeval.metrics.worst_slice`).
* :func:`compare_rows`, :func:`dice_colour` - the clean vs attacked table of the Dice panel.
* :func:`disagreement` - where the clean and attacked predictions differ (lost,
  gained, changed under attack).
* :func:`slice_extent`, :func:`slice_kinds` - the per-slice plot's range (the
  structure's extent with a margin) and its missed and false-positive slices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidLabelsError
from napari_segeval._names import CLEAN, unnamed_label
from napari_segeval.metrics.catalog import as_float
from napari_segeval.prompts.from_labels import key_index

#: Values of :func:`error_overlay`.
FALSE_POSITIVE = 1
FALSE_NEGATIVE = 2

#: Values of :func:`disagreement`.
LOST = 1
GAINED = 2
CHANGED = 3

#: Metric keys shown by the Dice panel, in order (their headers and display:
#: :data:`napari_segeval.metrics.METRICS`).
PANEL_KEYS: tuple[str, ...] = (
    "dice",
    "iou",
    "precision",
    "recall",
    "hd95",
    "nsd",
    "volume_pred_ml",
)


def _cleared(
    shape: tuple[int, ...], region: slice | None, out: np.ndarray | None, what: str
) -> tuple[np.ndarray, np.ndarray, slice]:
    """The map to fill (``out``, or a new uint8 one), its ``region`` zeroed, and that region.

    ``what`` names ``out`` in the error for a ``region`` without it.
    """
    if out is None:
        if region is not None:
            raise ValueError(f"region needs out= ({what} to update)")
        out = np.zeros(shape, np.uint8)
    sel = region if region is not None else slice(None)
    view = out[sel]
    view[...] = 0
    return out, view, sel


def error_overlay(
    reference: np.ndarray,
    prediction: np.ndarray,
    label: int,
    region: slice | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Mark false positives (1) and false negatives (2) of structure ``label``.

    Parameters
    ----------
    reference, prediction : numpy.ndarray
        Label maps of one shape.
    label : int
        Structure id.
    region : slice, optional
        Recompute only these indices along axis 0 (into ``out``).
    out : numpy.ndarray, optional
        uint8 array of the same shape to fill in place (required with ``region``).

    Returns
    -------
    numpy.ndarray
        uint8 map: 0 agreement, :data:`FALSE_POSITIVE`, :data:`FALSE_NEGATIVE`.

    Examples
    --------
    >>> ref = np.array([[1, 1, 0, 0]]); pred = np.array([[1, 0, 1, 2]])
    >>> error_overlay(ref, pred, 1).tolist()
    [[0, 2, 1, 0]]
    """
    reference = np.asarray(reference)
    prediction = np.asarray(prediction)
    if reference.shape != prediction.shape:
        raise ValueError(f"reference {reference.shape} and prediction {prediction.shape} differ")
    out, view, sel = _cleared(reference.shape, region, out, "the overlay")
    r = reference[sel] == label
    p = prediction[sel] == label
    view[p & ~r] = FALSE_POSITIVE
    view[r & ~p] = FALSE_NEGATIVE
    return out


def disagreement(
    clean: np.ndarray,
    attacked: np.ndarray,
    label: int | None = None,
    region: slice | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Mark where the attacked prediction departs from the clean one.

    Parameters
    ----------
    clean, attacked : numpy.ndarray
        Label maps of one shape (the prediction before and after the attack).
    label : int, optional
        Look at this structure only: :data:`LOST` where the clean prediction has
        it and the attacked one not, :data:`GAINED` the other way round. Without
        ``label`` every structure counts: :data:`LOST` where the clean prediction
        has a structure and the attacked one background, :data:`GAINED` where the
        attacked one has a structure on clean background, :data:`CHANGED` where
        both have a structure but different ones.
    region : slice, optional
        Recompute only these indices along axis 0 (into ``out``).
    out : numpy.ndarray, optional
        uint8 array of the same shape to fill in place (required with ``region``).

    Returns
    -------
    numpy.ndarray
        uint8 map: 0 where both agree, else :data:`LOST`, :data:`GAINED` or
        :data:`CHANGED`.

    Examples
    --------
    >>> clean = np.array([[1, 1, 0, 2, 0]]); attacked = np.array([[1, 0, 1, 1, 0]])
    >>> disagreement(clean, attacked).tolist()
    [[0, 1, 2, 3, 0]]
    >>> disagreement(clean, attacked, label=1).tolist()
    [[0, 1, 2, 2, 0]]
    """
    clean = np.asarray(clean)
    attacked = np.asarray(attacked)
    if clean.shape != attacked.shape:
        raise ValueError(f"clean {clean.shape} and attacked {attacked.shape} predictions differ")
    out, view, sel = _cleared(clean.shape, region, out, "the layer data")
    c, a = clean[sel], attacked[sel]
    if label is not None:
        had, has = c == label, a == label
        view[had & ~has] = LOST
        view[has & ~had] = GAINED
        return out
    had, has = c != 0, a != 0
    view[had & ~has] = LOST
    view[has & ~had] = GAINED
    view[had & has & (c != a)] = CHANGED
    return out


def _axis0_bounds(index: Any) -> tuple[int, int] | None:
    """(first, last + 1) along axis 0 of an index (int, slice, or integer array)."""
    if isinstance(index, slice):
        if index.start is None or index.stop is None:
            return None
        return int(index.start), int(index.stop)
    arr = np.asarray(index)
    if arr.size == 0:
        return (0, 0)
    if arr.dtype == bool:
        return None
    return int(arr.min()), int(arr.max()) + 1


def touched_slices(atoms: Iterable[Any], n_slices: int) -> slice | None:
    """Slice range along axis 0 changed by napari Labels paint-history atoms.

    napari's ``Labels.events.paint`` carries ``value``: a list of atoms, each
    either an object with a ``slice_key`` (a tuple of slices, from brush
    painting, fill and polygons) or a tuple ``(indices, old, new)`` whose
    ``indices`` is a numpy multi-index (from ``data_setitem``).

    Returns
    -------
    slice or None
        The union of the touched ranges, clipped to ``[0, n_slices)``; None when
        the range cannot be told (recount everything) - or ``slice(0, 0)`` when
        nothing was touched.

    Examples
    --------
    >>> class Atom: slice_key = (slice(4, 5), slice(0, 9), slice(2, 6))
    >>> touched_slices([Atom(), ((np.array([7, 9]), np.array([0, 1])), 0, 1)], 20)
    slice(4, 10, None)
    >>> touched_slices([], 20)
    slice(0, 0, None)
    """
    lo, hi = None, None
    for atom in atoms:
        key = getattr(atom, "slice_key", None)
        if key is None:
            try:
                key = atom[0]
            except (TypeError, IndexError, KeyError):
                return None
        first = key[0] if isinstance(key, tuple) and key else key
        bounds = _axis0_bounds(first)
        if bounds is None:
            return None
        if bounds[1] <= bounds[0]:
            continue
        lo = bounds[0] if lo is None else min(lo, bounds[0])
        hi = bounds[1] if hi is None else max(hi, bounds[1])
    if lo is None:
        return slice(0, 0)
    return slice(max(lo, 0), min(hi, int(n_slices)))


def focus_slice(labels: np.ndarray | None, label: int | None, n_slices: int) -> int:
    """Middle of a structure's extent along axis 0, else the middle of the volume.

    Examples
    --------
    >>> lab = np.zeros((10, 4, 4), np.uint8); lab[6:9, 1, 1] = 3
    >>> focus_slice(lab, 3, 10), focus_slice(lab, 1, 10), focus_slice(None, None, 7)
    (7, 5, 3)
    """
    if labels is not None and label is not None:
        try:
            return key_index(np.asarray(labels) == label, "volume")
        except InvalidLabelsError:
            pass
    return int(n_slices) // 2


def compare_rows(
    clean: Sequence[Mapping],
    attacked: Sequence[Mapping] | None = None,
    surface: Mapping[str, Sequence[Mapping]] | None = None,
    keys: Sequence[str] = PANEL_KEYS,
) -> list[dict]:
    """Merge clean and attacked metric rows into one record per structure.

    Parameters
    ----------
    clean, attacked : sequence of dict
        Rows with ``label``, ``name`` and metric keys (``LiveMetrics.table()`` or
        ``structure_table``); ``attacked`` may be None.
    surface : mapping, optional
        ``{"clean": rows, "attacked": rows}`` whose ``hd95``/``nsd`` fill in keys
        missing (or NaN) from the live rows.
    keys : sequence of str
        Metric keys to merge.

    Returns
    -------
    list of dict
        ``{"label", "name", "clean": {key: v}, "attacked": {key: v} or None,
        "delta": {key: attacked - clean} or None}``.

    Examples
    --------
    >>> r = compare_rows([{"label": 1, "name": "liver", "dice": 0.9}],
    ...                  [{"label": 1, "name": "liver", "dice": 0.6}], keys=["dice"])
    >>> r[0]["delta"]["dice"]
    -0.3000...
    """
    surface = surface or {}

    def index(rows):
        return {int(r["label"]): r for r in rows or ()}

    live = {CLEAN: index(clean), "attacked": index(attacked) if attacked is not None else None}
    surf = {k: index(v) for k, v in surface.items() if v is not None}
    out = []
    for label, row in live[CLEAN].items():
        rec: dict = {"label": label, "name": row.get("name", unnamed_label(label))}
        for cond in (CLEAN, "attacked"):
            rows = live[cond]
            if rows is None:
                rec[cond] = None
                continue
            vals = {}
            for key in keys:
                v = as_float((rows.get(label) or {}).get(key))
                if np.isnan(v) and cond in surf:
                    v = as_float((surf[cond].get(label) or {}).get(key))
                vals[key] = v
            rec[cond] = vals
        rec["delta"] = (
            None
            if rec["attacked"] is None
            else {k: rec["attacked"][k] - rec[CLEAN][k] for k in keys}
        )
        out.append(rec)
    return out


def dice_colour(value: float) -> tuple[int, int, int] | None:
    """Background colour for a Dice value: red (0) through amber (0.5) to green (1).

    Returns None for NaN (no colour).

    Examples
    --------
    >>> dice_colour(1.0), dice_colour(0.0), dice_colour(float("nan"))
    ((46, 160, 67), (200, 50, 50), None)
    """
    v = float(value)
    if np.isnan(v):
        return None
    v = min(max(v, 0.0), 1.0)
    red, amber, green = np.array([200, 50, 50]), np.array([220, 160, 40]), np.array([46, 160, 67])
    if v < 0.5:
        c = red + (amber - red) * (v / 0.5)
    else:
        c = amber + (green - amber) * ((v - 0.5) / 0.5)
    return tuple(round(x) for x in c)


__all__ = [
    "CHANGED",
    "FALSE_NEGATIVE",
    "FALSE_POSITIVE",
    "GAINED",
    "LOST",
    "PANEL_KEYS",
    "compare_rows",
    "dice_colour",
    "disagreement",
    "error_overlay",
    "focus_slice",
    "touched_slices",
]


def slice_kinds(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Missed and false-positive slices of one structure from its per-slice counts.

    Parameters
    ----------
    counts : numpy.ndarray
        ``(slices, 3)``: true positives, reference and predicted voxels per slice
        (:meth:`napari_segeval.metrics.LiveMetrics.slice_counts`).

    Returns
    -------
    missed, false_positive : numpy.ndarray of bool
        Slices with reference but no prediction, and with prediction but no
        reference (both have Dice 0; a slice with both has a Dice above 0 or an
        overlap of 0 and is neither).

    Examples
    --------
    >>> counts = np.array([[0, 0, 0], [0, 5, 0], [3, 4, 4], [0, 0, 2]])
    >>> [m.nonzero()[0].tolist() for m in slice_kinds(counts)]
    [[1], [3]]
    """
    counts = np.asarray(counts)
    ref, pred = counts[:, 1] > 0, counts[:, 2] > 0
    return ref & ~pred, pred & ~ref


def slice_extent(
    present: np.ndarray, margin: float = 0.1, min_margin: int = 2
) -> tuple[int, int] | None:
    """First and last slice to plot: where ``present`` is true, widened by a margin.

    The margin is ``margin`` of the extent's length, at least ``min_margin``
    slices, clipped to the volume. None when nothing is present.

    Examples
    --------
    >>> present = np.zeros(60, bool); present[20:31] = True  # a tumour on 11 slices
    >>> slice_extent(present)
    (18, 32)
    >>> slice_extent(np.ones(5, bool)), slice_extent(np.zeros(5, bool))
    ((0, 4), None)
    """
    where = np.flatnonzero(np.asarray(present))
    if where.size == 0:
        return None
    lo, hi = int(where[0]), int(where[-1])
    pad = max(int(min_margin), int(np.ceil(margin * (hi - lo + 1))))
    return max(0, lo - pad), min(len(present) - 1, hi + pad)
