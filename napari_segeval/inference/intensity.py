"""Foreground intensity statistics, percentile clipping and z-scoring (nnU-Net CT scheme).

From the voxels under a training set's reference labels; ROG's MR handling (Daza et al.
2021) min-max scales each channel first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from napari_segeval._errors import SegEvalError


@dataclass(frozen=True)
class IntensityStats:
    """Foreground statistics of :func:`clip_zscore` in raw units: clip bounds (the
    ``percentiles``), the voxel count and their ``source`` (a task folder, "given", ...)."""

    lower: float
    upper: float
    mean: float
    std: float
    n_voxels: int = 0
    source: str = "given"
    percentiles: tuple[float, float] = (0.5, 99.5)

    def __post_init__(self) -> None:
        for name in ("lower", "upper", "mean", "std"):
            if not np.isfinite(getattr(self, name)):
                raise SegEvalError(f"intensity statistic {name} is not finite")
        if self.std <= 0 or self.upper < self.lower:
            raise SegEvalError(
                f"invalid intensity statistics: std {self.std}, clip [{self.lower}, {self.upper}]"
            )

    @property
    def raw_per_normalized_unit(self) -> float:
        """Raw units (e.g. HU) per normalized unit: the foreground std."""
        return float(self.std)

    def to_dict(self) -> dict:
        """Plain dict (for JSON)."""
        return {**asdict(self), "percentiles": list(self.percentiles)}

    @classmethod
    def from_dict(cls, d: dict) -> IntensityStats:
        """Inverse of :meth:`to_dict`."""
        return cls(**{**d, "percentiles": tuple(d.get("percentiles", (0.5, 99.5)))})


def foreground_intensity_stats(
    pairs: Iterable[tuple[np.ndarray, np.ndarray]],
    *,
    max_per_case: int | None = 100_000,
    source: str = "given",
) -> IntensityStats:
    """Statistics of the voxels under ``labels > 0`` over ``(image, labels)`` pairs, at most
    ``max_per_case`` of a case drawn at random (seed 0; None: all)."""
    rng = np.random.default_rng(0)
    chunks = []
    for image, labels in pairs:
        if np.shape(image) != np.shape(labels):
            raise SegEvalError(
                f"image shape {np.shape(image)} and labels shape {np.shape(labels)} differ"
            )
        vals = np.asarray(image)[np.asarray(labels) > 0].astype(np.float64)
        if max_per_case is not None and vals.size > max_per_case:
            vals = rng.choice(vals, max_per_case, replace=False)
        chunks.append(vals)
    allv = np.concatenate(chunks) if chunks else np.zeros(0)
    if allv.size == 0:
        raise SegEvalError("no foreground voxels to compute intensity statistics from")
    lo, hi = np.percentile(allv, IntensityStats.percentiles)
    std, mean = float(allv.std()), float(allv.mean())
    return IntensityStats(float(lo), float(hi), mean, std if std > 0 else 1.0, allv.size, source)


def clip_zscore(image: np.ndarray, stats: IntensityStats) -> np.ndarray:
    """Clip to ``[stats.lower, stats.upper]`` then z-score with the foreground mean/std."""
    out = np.clip(np.asarray(image, np.float32), stats.lower, stats.upper)
    return ((out - np.float32(stats.mean)) / np.float32(stats.std)).astype(np.float32)


def minmax_scale(image: np.ndarray) -> tuple[np.ndarray, float]:
    """``(image - min) / (max - min)`` as float32, and ``max - min``: ROG's MR step (a
    constant image: 0 and 1, where their code divides by zero).
    """
    a = np.asarray(image, np.float32)
    lo, hi = float(a.min()), float(a.max())
    if not hi > lo:
        return np.zeros_like(a), 1.0
    return ((a - np.float32(lo)) / np.float32(hi - lo)).astype(np.float32), hi - lo
