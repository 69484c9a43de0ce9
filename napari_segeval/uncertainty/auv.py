"""The Aleatoric Uncertainty Value (AUV) of Li et al., CVPR 2026 (arXiv 2604.10963).

Class scale ``S(i|c)``, sample scale ``S(i)`` and AUV from decoded maps (:mod:`.features`);
the definitions and the released code's differences: docs/protocols.md ("uncertainty").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

LAYOUTS = ("D_HW", "H_DW", "W_DH")
#: Largest number of float64 values in one block of the Gram accumulation.
BLOCK_VALUES = 1 << 22


def class_matrix(decoded: np.ndarray, layout: str = "D_HW") -> np.ndarray:
    """The matrix whose singular values are analysed: a 3D map reshaped, a 2D map as it is.

    Parameters
    ----------
    decoded : numpy.ndarray
        ``(D, H, W)`` or ``(H, W)`` decoded map of one class.
    layout : {"D_HW", "H_DW", "W_DH"}
        Which axis becomes the rows of a 3D map (``D_HW``: the released code's).
    """
    a = np.asarray(decoded)
    if a.ndim == 2:
        return a
    if a.ndim != 3:
        raise ValueError(f"a decoded class map is 2D or 3D, got shape {a.shape}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    axis = LAYOUTS.index(layout)
    moved = np.moveaxis(a, axis, 0)
    return moved.reshape(moved.shape[0], -1)


def gram_eigenvalues(matrix: np.ndarray) -> np.ndarray:
    """Squared singular values of ``matrix`` (``r = min`` of its shape), largest first.

    The float64 Gram matrix of the smaller side is summed over blocks of the longer side
    (never a whole float64 copy); round-off below ``r * eps * max`` becomes 0.
    """
    m = np.asarray(matrix)
    if m.ndim != 2:
        raise ValueError(f"expected a matrix, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError("the decoded map contains NaN or infinite values")
    if m.shape[0] > m.shape[1]:  # the Gram matrix of the smaller side
        m = m.T
    r = m.shape[0]
    gram = np.zeros((r, r), dtype=np.float64)
    step = max(1, BLOCK_VALUES // max(r, 1))
    for start in range(0, m.shape[1], step):
        block = m[:, start : start + step].astype(np.float64)
        gram += block @ block.T
    if r == 0:
        return np.zeros(0)
    lam = np.linalg.eigvalsh(gram)[::-1]
    floor = r * np.finfo(np.float64).eps * max(float(lam[0]), 0.0)
    return np.where(lam > floor, lam, 0.0)


def energy(matrix: np.ndarray, power: float = 2.0) -> np.ndarray:
    """``p_j = s_j**power / sum s**power`` over the singular values (NaN for a zero matrix).

    ``power=2`` is the paper's energy, ``1`` the released code's.
    """
    lam = gram_eigenvalues(matrix)
    s_pow = lam if power == 2 else np.sqrt(lam) ** float(power)
    total = float(s_pow.sum())
    if total <= 0.0:
        return np.full(lam.shape, np.nan)
    return s_pow / total


def semantic_scale(matrix: np.ndarray, power: float = 2.0) -> float:
    """Normalized entropy of the singular-value energy of ``matrix``, in ``[0, 1]``.

    NaN when ``min(matrix.shape) < 2`` (``log r = 0``) or when the matrix is zero.
    """
    m = np.asarray(matrix)
    if m.ndim != 2 or min(m.shape) < 2:
        return math.nan
    p = energy(m, power)
    if not np.isfinite(p).all():
        return math.nan
    nz = p[p > 0]
    h = float(-(nz * np.log(nz)).sum())
    return float(min(max(h / math.log(p.size), 0.0), 1.0))


AGGREGATES = ("sum", "mean")


def sample_scale(class_scales: Iterable[float], aggregate: str = "sum") -> float:
    """``S(i)``: the sum (the paper's) or mean of the finite class scales (NaN: none)."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
    vals = [float(v) for v in class_scales if math.isfinite(float(v))]
    if not vals:
        return math.nan
    return float(sum(vals)) / (len(vals) if aggregate == "mean" else 1)


def normalize(scales: Mapping[str, float]) -> dict[str, float]:
    """AUV over a data set: ``1 - (log S - min log S) / (max log S - min log S)``.

    NaN (and non-positive) scales stay NaN and are left out of the min/max; when
    the finite values do not differ, every AUV is 0.
    """
    logs = {
        k: (math.log(float(v)) if math.isfinite(float(v)) and float(v) > 0 else math.nan)
        for k, v in scales.items()
    }
    finite = [v for v in logs.values() if not math.isnan(v)]
    if not finite:
        return {k: math.nan for k in scales}
    lo, hi = min(finite), max(finite)
    span = hi - lo
    return {
        k: (math.nan if math.isnan(v) else (0.0 if span <= 0 else 1.0 - (v - lo) / span))
        for k, v in logs.items()
    }


def auv_table(class_scales: Mapping[str, Mapping[str, float]], aggregate: str = "sum") -> dict:
    """Per-sample and per-class AUV from ``{case: {class name: S(i|c)}}``.

    ``aggregate`` makes the sample scale (:func:`sample_scale`). Returns ``{"cases":
    {case: {"scale", "auv", "n_classes"}}, "classes": {case: {class: {"scale",
    "auv"}}}}`` (NaN where undefined).
    """
    cases = sorted(class_scales)
    names = sorted({c for v in class_scales.values() for c in v})
    totals = {k: sample_scale(class_scales[k].values(), aggregate) for k in cases}
    auv = normalize(totals)
    per_class = {c: normalize({k: class_scales[k].get(c, math.nan) for k in cases}) for c in names}
    return {
        "cases": {
            k: {
                "scale": totals[k],
                "auv": auv[k],
                "n_classes": sum(1 for v in class_scales[k].values() if math.isfinite(float(v))),
            }
            for k in cases
        },
        "classes": {
            k: {
                c: {"scale": float(class_scales[k].get(c, math.nan)), "auv": per_class[c][k]}
                for c in names
            }
            for k in cases
        },
    }
