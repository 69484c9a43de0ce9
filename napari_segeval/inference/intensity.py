"""Foreground intensity statistics, percentile clipping and z-scoring (nnU-Net CT scheme).

Statistics are collected from the voxels under the reference labels (foreground)
of a training set: the [0.5, 99.5] percentiles, mean and standard deviation. An
image is clipped to the percentiles, then z-scored with the foreground mean/std,
so one normalized unit equals ``std`` raw units (HU for CT).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from napari_segeval._atomic import atomic_write_text
from napari_segeval._errors import ReadError, SegEvalError


@dataclass(frozen=True)
class IntensityStats:
    """Foreground statistics used by :func:`clip_zscore`.

    Attributes
    ----------
    lower, upper : float
        Clip bounds (raw units), by default the 0.5 and 99.5 foreground percentiles.
    mean, std : float
        Foreground mean and standard deviation (raw units) after nothing else.
    n_voxels : int
        Number of foreground voxels the numbers came from.
    source : str
        Where they came from (a task folder, "given", ...).

    Examples
    --------
    >>> s = IntensityStats(lower=-10.0, upper=200.0, mean=60.0, std=40.0)
    >>> s.raw_per_normalized_unit
    40.0
    """

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
        d = asdict(self)
        d["percentiles"] = list(self.percentiles)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> IntensityStats:
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        d["percentiles"] = tuple(d.get("percentiles", (0.5, 99.5)))
        return cls(**d)

    def save_json(self, path: str | Path) -> Path:
        """Write the statistics as JSON to ``path`` (overwrites)."""
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=2), overwrite=True)

    @classmethod
    def load_json(cls, path: str | Path) -> IntensityStats:
        """Read statistics written by :meth:`save_json`."""
        path = Path(path)
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ReadError(f"{path}: not an intensity statistics JSON file ({exc})") from exc


def foreground_intensity_stats(
    pairs: Iterable[tuple[np.ndarray, np.ndarray]],
    *,
    percentiles: tuple[float, float] = (0.5, 99.5),
    max_per_case: int | None = 100_000,
    seed: int = 0,
    source: str = "given",
) -> IntensityStats:
    """Statistics of the voxels under ``labels > 0`` over ``(image, labels)`` pairs.

    Parameters
    ----------
    pairs : iterable of (image, labels)
        Arrays on one grid per pair.
    percentiles : (float, float)
        Clip percentiles.
    max_per_case : int or None
        Random subsample of foreground voxels per case (``None``: all of them).
    seed : int
        Seed of the subsampling.
    source : str
        Recorded provenance.

    Examples
    --------
    >>> img = np.arange(1000, dtype=float).reshape(10, 10, 10)
    >>> lab = (img >= 500).astype(np.uint8)
    >>> s = foreground_intensity_stats([(img, lab)])
    >>> s.mean, round(s.lower, 3), round(s.upper, 3)
    (749.5, 502.495, 996.505)
    """
    rng = np.random.default_rng(seed)
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
    lo, hi = np.percentile(allv, percentiles)
    std = float(allv.std())
    return IntensityStats(float(lo), float(hi), float(allv.mean()), std if std > 0 else 1.0,
                          int(allv.size), source, tuple(percentiles))


def clip_zscore(image: np.ndarray, stats: IntensityStats) -> np.ndarray:
    """Clip to ``[stats.lower, stats.upper]`` then z-score with the foreground mean/std.

    Examples
    --------
    >>> s = IntensityStats(lower=0.0, upper=100.0, mean=50.0, std=25.0)
    >>> clip_zscore(np.array([-50.0, 50.0, 75.0, 500.0]), s)
    array([-2.,  0.,  1.,  2.], dtype=float32)
    """
    out = np.clip(np.asarray(image, np.float32), stats.lower, stats.upper)
    return ((out - np.float32(stats.mean)) / np.float32(stats.std)).astype(np.float32)


def stats_from_task(
    folder: str | Path,
    *,
    max_cases: int | None = None,
    percentiles: tuple[float, float] = (0.5, 99.5),
) -> IntensityStats:
    """Foreground statistics of the training cases of an MSD task folder.

    Reads ``dataset.json`` (its ``"training"`` list of ``{"image", "label"}``
    paths relative to the folder) and every listed pair.

    Parameters
    ----------
    folder : str or Path
        The task folder (``TaskXX_Name`` with ``dataset.json``).
    max_cases : int or None
        Use only the first cases.
    percentiles : (float, float)
        Clip percentiles.
    """
    from napari_segeval.io import read_case

    folder = Path(folder)
    ds = folder / "dataset.json"
    try:
        training = json.loads(ds.read_text())["training"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReadError(f"{ds}: cannot read the training list of an MSD task ({exc})") from exc
    if max_cases is not None:
        training = training[:max_cases]

    def pairs():
        for item in training:
            case = read_case(folder / item["image"], folder / item["label"])
            image = case.image[..., 0] if case.image.ndim == 4 else case.image
            yield image, case.labels

    return foreground_intensity_stats(pairs(), percentiles=percentiles, source=str(folder))
