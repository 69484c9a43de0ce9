"""Pure-numpy helpers behind the viewer panels: importing this loads no Qt, napari or magicgui."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidLabelsError
from napari_segeval._names import CLEAN, unnamed_label
from napari_segeval.metrics.catalog import as_float
from napari_segeval.prompts.from_labels import key_index

#: Values of :func:`disagreement`.
LOST, GAINED, CHANGED = 1, 2, 3
#: Values of :func:`error_overlay` (only in the prediction, only in the reference).
FALSE_POSITIVE, FALSE_NEGATIVE = LOST, GAINED

#: Metric keys shown by the Dice panel, in order.
PANEL_KEYS = ("dice", "iou", "precision", "recall", "hd95", "nsd", "volume_pred_ml")


def disagreement(
    clean: np.ndarray,
    attacked: np.ndarray,
    label: int | None = None,
    region: slice | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """A uint8 map of where ``attacked`` departs from ``clean``: :data:`LOST`, :data:`GAINED`
    (of ``label``, else of any structure) and, without ``label``, :data:`CHANGED` structure.

    ``region``: only those indices along axis 0 are recomputed into ``out`` (required then).
    """
    clean, attacked = np.asarray(clean), np.asarray(attacked)
    if clean.shape != attacked.shape:
        raise ValueError(f"the maps' shapes {clean.shape} and {attacked.shape} differ")
    if out is None:
        if region is not None:
            raise ValueError("region needs out= (the map to update)")
        out = np.zeros(clean.shape, np.uint8)
    sel = region if region is not None else slice(None)
    view, c, a = out[sel], clean[sel], attacked[sel]
    view[...] = 0
    had, has = (c == label, a == label) if label is not None else (c != 0, a != 0)
    view[had & ~has] = LOST
    view[has & ~had] = GAINED
    if label is None:
        view[had & has & (c != a)] = CHANGED
    return out


def error_overlay(
    reference: np.ndarray,
    prediction: np.ndarray,
    label: int,
    region: slice | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """False positives and negatives of ``label`` (uint8): :func:`disagreement` from the
    prediction to the reference (a false positive is what the reference "lost")."""
    return disagreement(prediction, reference, label, region, out)


def _axis0_bounds(index: Any) -> tuple[int, int] | None:
    """(first, last + 1) along axis 0 of an index (int, slice, or integer array)."""
    if isinstance(index, slice):
        return None if index.start is None or index.stop is None else (index.start, index.stop)
    arr = np.asarray(index)
    if arr.size == 0:
        return (0, 0)
    return None if arr.dtype == bool else (int(arr.min()), int(arr.max()) + 1)


def touched_slices(atoms: Iterable[Any], n_slices: int) -> slice | None:
    """Slice range along axis 0 changed by ``Labels.events.paint`` atoms (None: unknown); an
    atom has a ``slice_key`` (brush, fill, polygon) or is ``(indices, old, new)``."""
    spans = []
    for atom in atoms:
        key = getattr(atom, "slice_key", None)
        if key is None:
            try:
                key = atom[0]
            except (TypeError, IndexError, KeyError):
                return None
        bounds = _axis0_bounds(key[0] if isinstance(key, tuple) and key else key)
        if bounds is None:
            return None
        if bounds[1] > bounds[0]:
            spans.append(bounds)
    if not spans:
        return slice(0, 0)
    return slice(max(min(lo for lo, _ in spans), 0), min(max(hi for _, hi in spans), n_slices))


def union(old: slice | None, new: slice | None) -> slice | None:
    """The slice range covering ``old`` and ``new`` (None: everything)."""
    if old is None or new is None:
        return None
    if new.stop <= new.start:
        return old
    if old.stop <= old.start:
        return new
    return slice(min(old.start, new.start), max(old.stop, new.stop))


def focus_slice(labels: np.ndarray | None, label: int | None, n_slices: int) -> int:
    """Middle of a structure's extent along axis 0, else the middle of the volume."""
    if labels is not None and label is not None:
        try:
            return key_index(np.asarray(labels) == label, "volume")
        except InvalidLabelsError:
            pass
    return int(n_slices) // 2


def compare_rows(
    clean: Sequence[Mapping],
    attacked: Sequence[Mapping] | None = None,
    surface: Mapping[str, Sequence[Mapping] | None] | None = None,
    keys: Sequence[str] = PANEL_KEYS,
) -> list[dict]:
    """One ``{"label", "name", "clean", "attacked", "delta"}`` record per structure; ``surface``
    rows by condition fill the ``keys`` missing (or NaN) from the live rows."""

    def index(rows: Sequence[Mapping] | None) -> dict[int, Mapping]:
        return {int(r["label"]): r for r in rows or ()}

    fill = {cond: index(rows) for cond, rows in (surface or {}).items()}
    first = index(clean)
    live = {CLEAN: first, "attacked": None if attacked is None else index(attacked)}

    def values(cond: str, label: int) -> dict[str, float] | None:
        rows = live[cond]
        if rows is None:
            return None
        row, extra = rows.get(label, {}), fill.get(cond, {}).get(label, {})
        got = {k: as_float(row.get(k)) for k in keys}
        return {k: as_float(extra.get(k)) if np.isnan(v) else v for k, v in got.items()}

    out = []
    for label, row in first.items():
        rec: dict = {"label": label, "name": row.get("name", unnamed_label(label))}
        rec.update({cond: values(cond, label) for cond in live})
        att = rec["attacked"]
        rec["delta"] = None if att is None else {k: att[k] - rec[CLEAN][k] for k in keys}
        out.append(rec)
    return out


def dice_colour(value: float) -> tuple[int, int, int] | None:
    """Background colour for a Dice value: red (0) through amber (0.5) to green (1), None for NaN."""
    v = float(value)
    if np.isnan(v):
        return None
    stops = np.array([[200, 50, 50], [220, 160, 40], [46, 160, 67]])  # red, amber, green
    r, g, b = (round(float(np.interp(v, (0.0, 0.5, 1.0), col))) for col in stops.T)
    return r, g, b


def slice_kinds(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Missed and false-positive slices from ``(slices, 3)`` counts (TP, reference, predicted)."""
    counts = np.asarray(counts)
    ref, pred = counts[:, 1] > 0, counts[:, 2] > 0
    return ref & ~pred, pred & ~ref


def slice_extent(
    present: np.ndarray, margin: float = 0.1, min_margin: int = 2
) -> tuple[int, int] | None:
    """First and last slice where ``present``, widened by ``margin`` of the extent (at least
    ``min_margin`` slices, clipped); None when nothing is present."""
    where = np.flatnonzero(np.asarray(present))
    if where.size == 0:
        return None
    lo, hi = int(where[0]), int(where[-1])
    pad = max(int(min_margin), int(np.ceil(margin * (hi - lo + 1))))
    return max(0, lo - pad), min(len(present) - 1, hi + pad)
