"""The Aleatoric Uncertainty Value (AUV) of Li et al., CVPR 2026 (arXiv 2604.10963).

A frozen foundation model decodes each class of a sample into a map (MedSAM2's
mask-decoder logits of that class over the volume, see :mod:`.features`). This
module turns those maps into the paper's numbers; it is numpy only.

Definitions
-----------
*Class matrix.* The decoded map of class ``c`` in sample ``i``, shape
``(D, H, W)``, reshaped to a matrix ``M`` with one row per slice
(``layout="D_HW"``: ``D x H*W``, the layout of the authors' released code;
``"H_DW"`` and ``"W_DH"`` put another axis in the rows). A 2D map ``(H, W)`` is
used as it is.

*Energy.* ``M`` has ``r = min(rows, cols)`` singular values
``s_1 >= ... >= s_r >= 0`` (zeros included). Their energy distribution is
``p_j = s_j**power / sum_k s_k**power``; ``power = 2`` is the paper's energy
(``s_j**2``, the eigenvalues of ``M M^T``); ``power = 1`` is what the released
code computes (``S / S.sum()``).

*Semantic perception scale.* The normalized Shannon entropy of the energy,
``S(i|c) = -sum_j p_j log p_j / log r`` in ``[0, 1]`` (natural log, ``0 log 0 = 0``):
1 when the energy is spread evenly over all ``r`` directions (a rich, high-rank
representation), 0 when one direction holds all of it. It is undefined (NaN)
when ``r < 2`` or ``M`` is zero.

*Sample scale.* ``S(i) = sum_c S(i|c)`` over the foreground classes scored in
sample ``i`` (background is not a class here, as in the released code; a
class absent from the sample contributes nothing, so a sample missing a class
has a smaller sum). ``aggregate="mean"`` divides by the number of classes
scored instead (not in the paper; it removes that dependence).

*AUV.* Over the ``n`` samples of a data set,
``AUV(i) = 1 - (log S(i) - min_j log S(j)) / (max_j log S(j) - min_j log S(j))``
in ``[0, 1]``: 1 for the sample with the least diverse features (the most
uncertain), 0 for the most diverse. Per class, ``AUV_c(i)`` is the same
normalization of ``S(i|c)`` over the samples where ``c`` is scored. Samples that
could not be scored (NaN) are left out of the min/max and keep a NaN AUV; when
all scored values are equal there is no spread and every AUV is 0.

Numerics
--------
Singular values come from the eigenvalues of the Gram matrix of the smaller
side (``r x r``), accumulated in float64 over column (or row) blocks, so a
matrix with millions of columns is never copied whole in float64 and never
decomposed directly. Eigenvalues below ``r * eps * max`` (round-off) are set
to 0.
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
        Which axis becomes the rows of a 3D map.

    Examples
    --------
    >>> class_matrix(np.zeros((3, 4, 5))).shape, class_matrix(np.zeros((3, 4, 5)), "W_DH").shape
    ((3, 20), (5, 12))
    >>> class_matrix(np.zeros((4, 5))).shape
    (4, 5)
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

    The ``r x r`` Gram matrix of the smaller side is summed in float64 over
    blocks of the longer side, then :func:`numpy.linalg.eigvalsh`. Round-off
    below ``r * eps * max`` becomes 0.

    Examples
    --------
    >>> m = np.array([[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]])
    >>> gram_eigenvalues(m).tolist()
    [16.0, 9.0]
    """
    m = np.asarray(matrix)
    if m.ndim != 2:
        raise ValueError(f"expected a matrix, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError("the decoded map contains NaN or infinite values")
    wide = m.shape[0] <= m.shape[1]
    r, long = (m.shape[0], m.shape[1]) if wide else (m.shape[1], m.shape[0])
    gram = np.zeros((r, r), dtype=np.float64)
    step = max(1, BLOCK_VALUES // max(r, 1))
    for start in range(0, long, step):
        if wide:
            block = m[:, start : start + step].astype(np.float64)
            gram += block @ block.T
        else:
            block = m[start : start + step].astype(np.float64)
            gram += block.T @ block
    if r == 0:
        return np.zeros(0)
    lam = np.linalg.eigvalsh(gram)[::-1]
    floor = r * np.finfo(np.float64).eps * max(float(lam[0]), 0.0)
    return np.where(lam > floor, lam, 0.0)


def energy(matrix: np.ndarray, power: float = 2.0) -> np.ndarray:
    """Energy distribution ``p_j = s_j**power / sum s**power`` over all ``r`` singular values.

    NaN-filled when the matrix is zero.

    Examples
    --------
    >>> energy(np.diag([2.0, 1.0])).tolist(), energy(np.diag([2.0, 1.0]), power=1).round(3).tolist()
    ([0.8, 0.2], [0.667, 0.333])
    """
    lam = gram_eigenvalues(matrix)
    s_pow = lam if power == 2 else np.sqrt(lam) ** float(power)
    total = float(s_pow.sum())
    if total <= 0.0:
        return np.full(lam.shape, np.nan)
    return s_pow / total


def semantic_scale(matrix: np.ndarray, power: float = 2.0) -> float:
    """Normalized entropy of the singular-value energy of ``matrix``, in ``[0, 1]``.

    NaN when ``min(matrix.shape) < 2`` (no spread to measure: ``log r = 0``) or
    when the matrix is zero.

    Examples
    --------
    >>> semantic_scale(np.eye(4)), semantic_scale(np.outer([1.0, 2.0, 3.0], [1.0, 1.0]))
    (1.0, 0.0)
    >>> semantic_scale(np.ones((1, 5)))
    nan
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
    """``S(i)``: the sum (or mean) of the finite class scales (NaN when none is finite).

    Examples
    --------
    >>> sample_scale([0.5, float("nan"), 0.25]), sample_scale([float("nan")])
    (0.75, nan)
    >>> sample_scale([0.5, float("nan"), 0.25], "mean")
    0.375
    """
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

    Examples
    --------
    >>> auv = normalize({"a": 1.0, "b": 0.5, "c": 0.25, "d": float("nan")})
    >>> [round(auv[k], 3) for k in "abc"], auv["d"]
    ([0.0, 0.5, 1.0], nan)
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

    ``aggregate`` makes the sample scale (:func:`sample_scale`).

    Returns ``{"cases": {case: {"scale", "auv", "n_classes"}}, "classes": {case:
    {class: {"scale", "auv"}}}}`` (floats; NaN where undefined).

    Examples
    --------
    >>> t = auv_table({"a": {"liver": 0.9, "tumour": 0.6}, "b": {"liver": 0.3}})
    >>> t["cases"]["a"]["auv"], t["cases"]["b"]["auv"], t["classes"]["b"]["tumour"]["auv"]
    (0.0, 1.0, nan)
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


__all__ = [
    "AGGREGATES",
    "LAYOUTS",
    "auv_table",
    "class_matrix",
    "energy",
    "gram_eigenvalues",
    "normalize",
    "sample_scale",
    "semantic_scale",
]
