"""Per-structure and per-case uncertainty scores, case filtering and correlation.

Regions
-------
*Boundary band* of a predicted structure ``S`` with width ``w`` (voxels): the
voxels within ``w`` steps (6-/4-connectivity) of its boundary on either side,
``dilate(S, w) \\ erode(S, w)``. The *scored region* of a structure is
``S ∪ band = dilate(S, w)``; the scored region of a case is the dilation of
the whole predicted foreground (all voxels when nothing is predicted, so a
case that misses everything is still scored).

Mean uncertainty over a region
------------------------------
For normalised uncertainty ``u_v ∈ [0, 1]`` over a region ``R``, the
uncertainty-volume curve is ``F(t) = |{v ∈ R : u_v > t}| / |R|``, the fraction
of the region more uncertain than ``t``, and the mean uncertainty

    (1/|R|) Σ_{v∈R} u_v = ∫_0^1 F(t) dt

(layer-cake identity: ``u = ∫_0^1 1[u > t] dt`` for ``u ∈ [0, 1]``). So a score
of 0.2 reads "on average a voxel of the prediction and its boundary band sits
at 20% of the maximal entropy". This is a property of the segmenting model's
predictive entropy; it is *not* the Aleatoric Uncertainty Value of Li et al.
(2026), which is in :mod:`.auv`.

Filtering
---------
:func:`filter_most_uncertain` ranks cases by score and removes the top
fraction, with one of two counting rules (:data:`REMOVAL_RULES`): ``"round"``
removes ``floor(f * n + 0.5)`` cases (:func:`n_removed`); ``"quantile"`` keeps
the cases at or below the ``(1 - f)`` empirical quantile,
``F^-1(1 - f) = inf{a : 1 - f <= F(a)}`` (Li et al.'s rule), so it removes
``n - ceil((1 - f) * n)`` cases when the scores are distinct
(:func:`n_removed_quantile`) and never splits a tie.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from napari_segeval._names import unnamed_structures
from napari_segeval.uncertainty.maps import entropy

#: Counting rules of :func:`filter_most_uncertain`.
REMOVAL_RULES = ("round", "quantile")


def _dilate(mask: np.ndarray, width: int) -> np.ndarray:
    from scipy import ndimage

    if width <= 0 or not mask.any():
        return mask.copy()
    st = ndimage.generate_binary_structure(mask.ndim, 1)
    sl = ndimage.find_objects(mask.astype(np.uint8))[0]
    box = tuple(
        slice(max(s.start - width, 0), min(s.stop + width, n)) for s, n in zip(sl, mask.shape)
    )
    out = np.zeros_like(mask)
    out[box] = ndimage.binary_dilation(mask[box], st, iterations=width)
    return out


def _erode(mask: np.ndarray, width: int) -> np.ndarray:
    from scipy import ndimage

    if width <= 0 or not mask.any():
        return mask.copy()
    st = ndimage.generate_binary_structure(mask.ndim, 1)
    return ndimage.binary_erosion(mask, st, iterations=width, border_value=0)


def boundary_band(mask: np.ndarray, width: int = 1) -> np.ndarray:
    """Voxels within ``width`` steps of the boundary of ``mask``, inside and outside.

    Examples
    --------
    >>> m = np.zeros((7, 7), bool); m[2:5, 2:5] = True
    >>> b = boundary_band(m, 1)
    >>> int(b.sum()), bool(b[3, 3]), bool(b[1, 3]), bool(b[0, 3])
    (20, False, True, False)
    """
    m = np.asarray(mask, dtype=bool)
    return _dilate(m, width) & ~_erode(m, width)


def scored_region(labels: np.ndarray, label: int | None = None, band: int = 1) -> np.ndarray:
    """Structure ``label`` (or all foreground when None) plus its boundary band.

    Examples
    --------
    >>> lab = np.zeros((5, 5), int); lab[2, 2] = 1
    >>> int(scored_region(lab, band=1).sum()), int(scored_region(lab, 2).sum())
    (5, 0)
    """
    lab = np.asarray(labels)
    mask = lab > 0 if label is None else lab == int(label)
    return _dilate(mask, int(band))


def mean_uncertainty(uncertainty: np.ndarray, region: np.ndarray | None = None) -> float:
    """Mean of ``u`` over ``region`` (= ``∫_0^1 F(t) dt``, the area under its uncertainty-volume curve).

    ``F(t)`` is the fraction of ``region`` voxels whose uncertainty exceeds ``t``
    (see the module docstring); values are clipped to ``[0, 1]`` first. NaN for
    an empty region.

    Examples
    --------
    >>> u = np.array([0.0, 0.2, 0.4, 1.0])
    >>> mean_uncertainty(u), mean_uncertainty(u, u > 0.1)
    (0.4, 0.5333333333333333)
    """
    u = np.clip(np.asarray(uncertainty, dtype=np.float64), 0.0, 1.0)
    if region is not None:
        u = u[np.asarray(region, dtype=bool)]
    return float(u.mean()) if u.size else math.nan


def uncertainty_volume_curve(
    uncertainty: np.ndarray, region: np.ndarray | None = None, n_thresholds: int = 101
) -> tuple[np.ndarray, np.ndarray]:
    """``(t, F(t))`` on ``n_thresholds`` evenly spaced thresholds in ``[0, 1]``.

    Examples
    --------
    >>> t, f = uncertainty_volume_curve(np.array([0.25, 0.75]), n_thresholds=5)
    >>> t.tolist(), f.tolist()
    ([0.0, 0.25, 0.5, 0.75, 1.0], [1.0, 0.5, 0.5, 0.0, 0.0])
    """
    u = np.clip(np.asarray(uncertainty, dtype=np.float64), 0.0, 1.0)
    if region is not None:
        u = u[np.asarray(region, dtype=bool)]
    t = np.linspace(0.0, 1.0, int(n_thresholds))
    if not u.size:
        return t, np.full_like(t, np.nan)
    s = np.sort(u.ravel())
    return t, 1.0 - np.searchsorted(s, t, side="right") / s.size


def case_score(uncertainty: np.ndarray, labels: np.ndarray, band: int = 1) -> float:
    """Mean uncertainty over the predicted foreground plus its ``band``-voxel boundary band.

    All voxels are scored when nothing is predicted.

    Examples
    --------
    >>> u = np.zeros((5, 5)); u[2, 1:4] = [0.5, 1.0, 0.5]
    >>> lab = np.zeros((5, 5), int); lab[2, 2] = 1
    >>> case_score(u, lab, band=0), case_score(u, lab, band=1)
    (1.0, 0.4)
    """
    region = scored_region(labels, None, band)
    return mean_uncertainty(uncertainty, region if region.any() else None)


def structure_scores(
    uncertainty: np.ndarray,
    labels: np.ndarray,
    structures: Mapping[int, str] | None = None,
    band: int = 1,
) -> list[dict]:
    """Per predicted structure: mean uncertainty inside, in the band, and over both.

    Returns rows ``{"label", "name", "inside", "band", "score", "n_voxels"}``;
    ``inside`` is the mean over the predicted structure, ``band`` over its
    boundary band, ``score`` over both together (NaN when the structure is not
    predicted). ``structures`` defaults to the labels present.

    Examples
    --------
    >>> u = np.zeros((8, 8)); u[1:7, 1:7] = 0.5; u[2:6, 2:6] = 0.1
    >>> lab = np.zeros((8, 8), int); lab[2:6, 2:6] = 1
    >>> r = structure_scores(u, lab, {1: "a", 2: "b"})
    >>> round(r[0]["inside"], 3), round(r[0]["band"], 3), round(r[0]["score"], 3), r[1]["n_voxels"]
    (0.1, 0.329, 0.3, 0)
    """
    lab = np.asarray(labels)
    u = np.asarray(uncertainty)
    if lab.shape != u.shape:
        raise ValueError(f"uncertainty {u.shape} and labels {lab.shape} differ in shape")
    if structures is None:
        structures = unnamed_structures(np.unique(lab))
    rows = []
    for label, name in structures.items():
        mask = lab == int(label)
        rows.append(
            {
                "label": int(label),
                "name": str(name),
                "inside": mean_uncertainty(u, mask),
                "band": mean_uncertainty(u, boundary_band(mask, band)),
                "score": mean_uncertainty(u, _dilate(mask, band)),
                "n_voxels": int(mask.sum()),
            }
        )
    return rows


def entropy_band_score(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """Case score of the ``uncertainty`` protocol's defaults: mean normalised entropy (band 1).

    The mean over the predicted foreground and its one-voxel boundary band
    (:func:`case_score`; all voxels when nothing is predicted).

    ``probabilities`` is ``(K, *spatial)``; the entropy is normalised by ``log K``.

    Examples
    --------
    >>> p = np.stack([np.full((3, 3), 0.5), np.full((3, 3), 0.5)])
    >>> entropy_band_score(p, np.zeros((3, 3), int))
    1.0
    """
    return case_score(entropy(probabilities, 0, normalized=True), labels, band=1)


def _share(fraction: float) -> float:
    """``fraction`` as a float, checked to be in ``[0, 1]``."""
    share = float(fraction)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    return share


def n_removed(n: int, fraction: float) -> int:
    """How many of ``n`` cases the top ``fraction`` is: ``floor(fraction * n + 0.5)``.

    Round half up, so 5% of 20 is 1, 5% of 10 is 1 (0.5 rounds up), 5% of 9
    is 0 (0.45) and 10% of 25 is 3 (2.5). A fraction of 1 removes everything.

    Examples
    --------
    >>> [n_removed(n, f) for n, f in [(20, 0.05), (10, 0.05), (9, 0.05), (25, 0.1), (3, 1.0)]]
    [1, 1, 0, 3, 3]
    """
    return min(int(n), math.floor(_share(fraction) * int(n) + 0.5 + 1e-9))


def n_removed_quantile(n: int, fraction: float) -> int:
    """Cases above the ``(1 - fraction)`` empirical quantile of ``n`` distinct scores.

    ``n - ceil((1 - fraction) * n)``: 5% of 20 is 1, 5% of 10 is 0 (9.5 rounds
    up to 10 kept), 10% of 10 is 1, 10% of 6 is 0. Ties at the quantile are all
    kept, so with tied scores :func:`filter_most_uncertain` may remove fewer.

    Examples
    --------
    >>> [n_removed_quantile(n, f) for n, f in [(20, 0.05), (10, 0.05), (10, 0.1), (6, 0.1), (4, 1.0)]]
    [1, 0, 1, 0, 4]
    """
    return int(n) - math.ceil((1.0 - _share(fraction)) * int(n) - 1e-9)


def filter_most_uncertain(
    scores: Mapping[str, float], fraction: float, rule: str = "round"
) -> tuple[list[str], list[str]]:
    """Split cases into ``(kept, removed)``: removed = the most uncertain ``fraction``.

    Ranking is by score, highest first; NaN scores rank as the most uncertain
    (a case that could not be scored is not trusted); ties break by case id.
    Both lists keep that ranking order. ``rule`` (:data:`REMOVAL_RULES`):
    ``"round"`` removes the :func:`n_removed` first cases of the ranking;
    ``"quantile"`` keeps every case whose score is at or below the ``(1 - f)``
    empirical quantile ``inf{a : 1 - f <= F(a)}`` (NaN counting as the largest
    score) and removes the rest (:func:`n_removed_quantile` cases when the
    scores are distinct).

    Examples
    --------
    >>> filter_most_uncertain({"a": 0.1, "b": 0.9, "c": 0.5, "d": 0.2}, 0.5)
    (['d', 'a'], ['b', 'c'])
    >>> filter_most_uncertain({"a": 0.1, "b": 0.9, "c": 0.9}, 0.34, "quantile")
    (['b', 'c', 'a'], [])
    """
    if rule not in REMOVAL_RULES:
        raise ValueError(f"rule must be one of {REMOVAL_RULES}, got {rule!r}")

    def value(case: str) -> float:
        s = float(scores[case])
        return math.inf if math.isnan(s) else s

    ranked = sorted(scores, key=lambda c: (-value(c), c))
    if rule == "round":
        k = n_removed(len(ranked), fraction)
        return ranked[k:], ranked[:k]
    n_keep = len(ranked) - n_removed_quantile(len(ranked), fraction)
    if n_keep <= 0:
        return [], ranked
    threshold = sorted(value(c) for c in ranked)[n_keep - 1]
    return (
        [c for c in ranked if value(c) <= threshold],
        [c for c in ranked if value(c) > threshold],
    )


def correlation(x: Sequence[float], y: Sequence[float]) -> dict:
    """Pearson and Spearman correlation of paired values (NaN pairs dropped).

    Examples
    --------
    >>> c = correlation([1, 2, 3, 4], [10, 20, 30, 45])
    >>> round(c["pearson"], 3), c["spearman"], c["n"]
    (0.994, 1.0, 4)
    """
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    out = {"pearson": math.nan, "spearman": math.nan, "n": int(a.size)}
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return out
    from scipy import stats

    out["pearson"] = float(stats.pearsonr(a, b)[0])
    out["spearman"] = float(stats.spearmanr(a, b)[0])
    return out


__all__ = [
    "REMOVAL_RULES",
    "boundary_band",
    "case_score",
    "correlation",
    "entropy_band_score",
    "filter_most_uncertain",
    "mean_uncertainty",
    "n_removed",
    "n_removed_quantile",
    "scored_region",
    "structure_scores",
    "uncertainty_volume_curve",
]
