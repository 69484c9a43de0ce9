"""Per-structure and per-case uncertainty scores (predictive entropy, not the AUV), filtering."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from napari_segeval._names import unnamed_structures
from napari_segeval.metrics.surface import bounding_box
from napari_segeval.uncertainty.maps import entropy

#: Counting rules of :func:`filter_most_uncertain`.
REMOVAL_RULES = ("round", "quantile")


def _dilate(mask: np.ndarray, width: int) -> np.ndarray:
    from scipy import ndimage

    box = bounding_box(mask, width) if width > 0 else None
    if box is None:  # nothing to grow, or no width
        return mask.copy()
    st = ndimage.generate_binary_structure(mask.ndim, 1)
    out = np.zeros_like(mask)
    out[box] = ndimage.binary_dilation(mask[box], st, iterations=width)
    return out


def boundary_band(mask: np.ndarray, width: int = 1) -> np.ndarray:
    """Voxels within ``width`` steps (6-/4-connectivity) of the boundary of ``mask``, both sides."""
    from scipy import ndimage

    m = np.asarray(mask, dtype=bool)
    if width <= 0 or not m.any():
        return np.zeros_like(m)
    st = ndimage.generate_binary_structure(m.ndim, 1)
    return _dilate(m, width) & ~ndimage.binary_erosion(m, st, iterations=width, border_value=0)


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
    """Mean of ``u`` clipped to ``[0, 1]`` over ``region``, NaN if empty.

    Equals ``∫_0^1 F(t) dt``, ``F(t) = |{v : u_v > t}| / |region|`` (layer-cake identity).
    """
    u = np.clip(np.asarray(uncertainty, dtype=np.float64), 0.0, 1.0)
    if region is not None:
        u = u[np.asarray(region, dtype=bool)]
    return float(u.mean()) if u.size else math.nan


def case_score(uncertainty: np.ndarray, labels: np.ndarray, band: int = 1) -> float:
    """Mean uncertainty over the predicted foreground plus its ``band``-voxel boundary band.

    All voxels are scored when nothing is predicted.
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

    Returns rows ``{"label", "name", "inside", "band", "score", "n_voxels"}``
    (``score``: over both; NaN when the structure is not predicted). ``structures``
    defaults to the labels present.
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

    :func:`case_score` of the entropy of ``probabilities`` ``(K, *spatial)``, normalised
    by ``log K``.
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

    Round half up: 5% of 10 is 1, 5% of 9 is 0. A fraction of 1 removes everything.
    """
    return min(int(n), math.floor(_share(fraction) * int(n) + 0.5 + 1e-9))


def n_removed_quantile(n: int, fraction: float) -> int:
    """Cases above the ``(1 - fraction)`` empirical quantile of ``n`` distinct scores.

    ``n - ceil((1 - fraction) * n)`` (Li et al.'s rule): 5% of 10 is 0. Ties at the
    quantile are all kept, so with tied scores :func:`filter_most_uncertain` may remove fewer.
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
    """Pearson and Spearman correlation of paired values (NaN pairs dropped; NaN under 3)."""
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
