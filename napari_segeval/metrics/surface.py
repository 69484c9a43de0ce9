"""Surface metrics from surface elements (surfels): HD, HD95, ASSD and NSD in mm.

DeepMind's ``surface-distance`` definitions (Nikolov et al. 2018), area-weighted; how they
differ from MONAI's, medpy's and seg-metrics': docs/design.md, "Surface metrics".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from napari_segeval._errors import GeometryMismatchError, InvalidLabelsError
from napari_segeval.metrics import _border_search as _search
from napari_segeval.metrics._surfel_tables import contour_length_table_2d, surfel_area_table_3d
from napari_segeval.metrics.overlap import empty_value


def bounding_box(mask: np.ndarray, margin: int = 0) -> tuple[slice, ...] | None:
    """Slices of the smallest box holding all non-zero voxels, grown by ``margin`` (clipped);
    None when the mask is empty.
    """
    # first axis from one reduction over the others, then the rest from the
    # projection of that slab along the first axis (two passes over the array)
    hit = np.flatnonzero(mask.any(axis=tuple(range(1, mask.ndim))) if mask.ndim > 1 else mask)
    if hit.size == 0:
        return None
    first = slice(max(int(hit[0]) - margin, 0), min(int(hit[-1]) + 1 + margin, mask.shape[0]))
    if mask.ndim == 1:
        return (first,)
    rest = bounding_box(np.asarray(mask[int(hit[0]) : int(hit[-1]) + 1].any(axis=0)), margin)
    assert rest is not None  # the slab holds the first and last hit
    return (first, *rest)


def _directions(ref: np.ndarray, pred: np.ndarray, sp: np.ndarray) -> list[tuple] | None:
    """Per direction (ref to pred, pred to ref): distances, ranks, rank values, areas; None
    when both masks are empty.
    """
    box = bounding_box(ref | pred)
    if box is None:
        return None
    table = (surfel_area_table_3d if sp.size == 3 else contour_length_table_2d)(sp)
    pad = _search.window(sp)
    codes = [_search.padded_codes(m[box], pad) for m in (ref, pred)]
    borders = [_search.border(c) for c in codes]
    areas = [table[c.reshape(-1)[idx]] for c, (_, idx) in zip(codes, borders)]
    del codes
    out = []
    for (_, idx_a), area_a, (grid_b, idx_b) in zip(borders, areas, borders[::-1]):
        if idx_b.size == 0 or idx_a.size == 0:
            n = idx_a.size
            out.append((np.full(n, np.inf), np.zeros(n, np.int64), np.full(1, np.inf), area_a))
        else:
            out.append((*_search.nearest(idx_a, grid_b, idx_b, sp, pad), area_a))
    return out


def surface_distances(
    reference_mask: np.ndarray, prediction_mask: np.ndarray, spacing: Sequence[float]
) -> dict[str, np.ndarray]:
    """Surfel distances and areas of two binary masks, each direction sorted.

    Parameters
    ----------
    reference_mask, prediction_mask : numpy.ndarray
        2D or 3D masks of one shape (non-zero is inside).
    spacing : sequence of float
        Voxel spacing in mm per array axis.

    Returns
    -------
    dict
        ``distances_ref_to_pred``, ``areas_ref``, ``distances_pred_to_ref``,
        ``areas_pred``: float64 arrays sorted by (distance, area), like DeepMind's
        ``compute_surface_distances``. A mask without surface has empty arrays and
        the other direction's distances are ``inf``.
    """
    ref, pred, sp = _check(reference_mask, prediction_mask, spacing)
    keys = ("distances_ref_to_pred", "areas_ref", "distances_pred_to_ref", "areas_pred")
    both = _directions(ref, pred, sp)
    if both is None:
        return dict.fromkeys(keys, np.zeros(0))
    (d_rp, _, _, a_r), (d_pr, _, _, a_p) = both
    o_r, o_p = np.lexsort((a_r, d_rp)), np.lexsort((a_p, d_pr))
    return dict(zip(keys, (d_rp[o_r], a_r[o_r], d_pr[o_p], a_p[o_p])))


def _check(ref, pred, spacing) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ref, pred = np.asarray(ref), np.asarray(pred)
    if ref.shape != pred.shape:
        raise GeometryMismatchError(
            f"reference mask {ref.shape} and prediction mask {pred.shape} differ in shape"
        )
    if ref.ndim not in (2, 3):
        raise InvalidLabelsError(f"surface metrics need 2D or 3D masks, got {ref.ndim}D")
    sp = np.asarray(spacing, dtype=np.float64)
    if sp.shape != (ref.ndim,) or not np.all(sp > 0):
        raise GeometryMismatchError(
            f"spacing {tuple(spacing)} does not give one positive value per axis of {ref.shape}"
        )
    return ref.astype(bool, copy=False), pred.astype(bool, copy=False), sp


def surface_metrics(
    reference_mask: np.ndarray,
    prediction_mask: np.ndarray,
    spacing: Sequence[float],
    *,
    tolerance_mm: float = 2.0,
    percentile: float = 95.0,
    empty: str = "one",
) -> dict[str, float]:
    """HD, HD95, ASSD (mm) and NSD of two binary masks from one distance pass.

    Parameters
    ----------
    reference_mask, prediction_mask : numpy.ndarray
        2D or 3D masks of one shape; non-zero is inside.
    spacing : sequence of float
        Voxel spacing in mm per array axis (anisotropic spacing is honoured).
    tolerance_mm : float
        NSD tolerance ``tau`` in mm (a surfel counts when its distance <= tau).
    percentile : float
        Percentile of the robust Hausdorff distance (``hd95`` key keeps its name).
    empty : {"one", "nan", "zero"}
        Both masks empty: "one" gives hd = hd95 = assd = 0 and nsd = 1; "nan"
        gives NaN for all four; "zero" gives infinite distances and nsd = 0.
        One mask empty (any convention): hd = hd95 = assd = inf and nsd = 0,
        as DeepMind (whose ASSD would be NaN for the empty side).

    Returns
    -------
    dict
        Keys ``hd``, ``hd95``, ``assd``, ``nsd`` (floats).

    Notes
    -----
    NSD and HD95 equal DeepMind's (tested to 1e-9 and 1e-6); MONAI's HD95 is close, not
    equal (docs/design.md, "Surface metrics").
    """
    empty_value(empty)  # checks it
    ref, pred, sp = _check(reference_mask, prediction_mask, spacing)
    both = _directions(ref, pred, sp)
    if both is None:  # no surface on either side
        value = {"one": (0.0, 1.0), "nan": (np.nan, np.nan), "zero": (np.inf, 0.0)}[empty]
        return {"hd": value[0], "hd95": value[0], "assd": value[0], "nsd": value[1]}
    (d_rp, rank_r, val_r, a_r), (d_pr, rank_p, val_p, a_p) = both
    if a_r.size == 0 or a_p.size == 0:  # one mask empty
        return {"hd": np.inf, "hd95": np.inf, "assd": np.inf, "nsd": 0.0}
    hd = float(max(d_rp.max(), d_pr.max()))
    hd95 = max(
        weighted_percentile(rank_r, val_r, a_r, percentile),
        weighted_percentile(rank_p, val_p, a_p, percentile),
    )
    total = np.sum(a_r) + np.sum(a_p)
    assd = float((np.dot(d_rp, a_r) + np.dot(d_pr, a_p)) / total)
    overlap = np.sum(a_r[d_rp <= tolerance_mm]) + np.sum(a_p[d_pr <= tolerance_mm])
    return {"hd": hd, "hd95": hd95, "assd": assd, "nsd": float(overlap / total)}


def weighted_percentile(
    ranks: np.ndarray, values: np.ndarray, areas: np.ndarray, percent: float
) -> float:
    """Area-weighted percentile of the distances ``values[ranks]`` (DeepMind's rule), unsorted.

    ``ranks`` increase with the distance (:func:`~._border_search.nearest`); the result is
    the first distance whose cumulative area fraction reaches ``percent / 100``; inf without
    surfels. Sorted distances: ``ranks = arange(n)``, ``values = distances``.
    """
    if ranks.size == 0:
        return float("inf")
    counts = np.bincount(ranks, minlength=values.size)
    sums = np.bincount(ranks, weights=areas, minlength=values.size)
    used = counts > 0
    cumulative = np.cumsum(sums[used]) / np.sum(areas)
    idx = int(np.searchsorted(cumulative, percent / 100.0))
    return float(values[used][min(idx, int(used.sum()) - 1)])


__all__ = [
    "bounding_box",
    "surface_distances",
    "surface_metrics",
    "weighted_percentile",
]
