"""Foreground intensity statistics, percentile clipping and z-scoring (nnU-Net CT scheme).

Statistics are collected from the voxels under the reference labels (foreground)
of a training set: the [0.5, 99.5] percentiles, mean and standard deviation. An
image is clipped to the percentiles, then z-scored with the foreground mean/std,
so one normalized unit equals ``std`` raw units (HU for CT).

Multi-channel images (MR sequences) have one set of statistics per channel
(:func:`channel_intensity_stats`). ROG's MR handling (Daza et al. 2021) first
min-max scales each image channel to [0, 1] (:func:`minmax_scale`); the
statistics are then in those units, and one normalized unit is ``std x (max -
min)`` raw units of that image.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

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
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
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
    chunks = [_foreground_sample(image, labels, rng, max_per_case) for image, labels in pairs]
    return _stats_of(chunks, percentiles, source)


def _foreground_sample(image, labels, rng, max_per_case: int | None) -> np.ndarray:
    if np.shape(image) != np.shape(labels):
        raise SegEvalError(
            f"image shape {np.shape(image)} and labels shape {np.shape(labels)} differ"
        )
    vals = np.asarray(image)[np.asarray(labels) > 0].astype(np.float64)
    if max_per_case is not None and vals.size > max_per_case:
        vals = rng.choice(vals, max_per_case, replace=False)
    return vals


def _stats_of(chunks: list, percentiles: tuple[float, float], source: str) -> IntensityStats:
    allv = np.concatenate(chunks) if chunks else np.zeros(0)
    if allv.size == 0:
        raise SegEvalError("no foreground voxels to compute intensity statistics from")
    lo, hi = np.percentile(allv, percentiles)
    std = float(allv.std())
    return IntensityStats(
        float(lo),
        float(hi),
        float(allv.mean()),
        std if std > 0 else 1.0,
        int(allv.size),
        source,
        cast("tuple[float, float]", tuple(percentiles)),
    )


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


def minmax_scale(image: np.ndarray) -> tuple[np.ndarray, float]:
    """``(image - min) / (max - min)`` as float32, and ``max - min`` (raw units per scaled unit).

    ROG's MR step (per image and channel, before the percentile clip and
    z-score). A constant image maps to 0 with a range of 1 (their code divides by zero).

    Examples
    --------
    >>> out, rng = minmax_scale(np.array([10.0, 20.0, 30.0]))
    >>> out.tolist(), rng
    ([0.0, 0.5, 1.0], 20.0)
    >>> minmax_scale(np.full(3, 7.0))[1]
    1.0
    """
    a = np.asarray(image, np.float32)
    lo, hi = float(a.min()), float(a.max())
    if not hi > lo:
        return np.zeros_like(a), 1.0
    return ((a - np.float32(lo)) / np.float32(hi - lo)).astype(np.float32), hi - lo


def channel_intensity_stats(
    pairs: Iterable[tuple[np.ndarray, np.ndarray]],
    n_channels: int,
    *,
    minmax: bool = False,
    percentiles: tuple[float, float] = (0.5, 99.5),
    max_per_case: int | None = 100_000,
    seed: int = 0,
    source: str = "given",
) -> tuple[IntensityStats, ...]:
    """:func:`foreground_intensity_stats` of each channel of ``(image (C, *spatial), labels)`` pairs.

    ``minmax`` scales every channel of every image to [0, 1] first
    (:func:`minmax_scale`, ROG's MR step), so the statistics are in those units.

    Examples
    --------
    >>> img = np.stack([np.arange(8.0).reshape(2, 4), 100 + np.arange(8.0).reshape(2, 4)])
    >>> lab = np.ones((2, 4), np.uint8)
    >>> [s.mean for s in channel_intensity_stats([(img, lab)], 2)]
    [3.5, 103.5]
    >>> channel_intensity_stats([(img, lab)], 2, minmax=True)[1].mean
    0.5
    """
    rng = np.random.default_rng(seed)
    chunks: list[list] = [[] for _ in range(n_channels)]
    for image, labels in pairs:
        image = np.asarray(image)
        if image.ndim != np.ndim(labels) + 1 or image.shape[0] != n_channels:
            raise SegEvalError(
                f"image shape {image.shape} is not {n_channels} channels over "
                f"labels of shape {np.shape(labels)}"
            )
        for c in range(n_channels):
            channel = minmax_scale(image[c])[0] if minmax else image[c]
            chunks[c].append(_foreground_sample(channel, labels, rng, max_per_case))
    return tuple(_stats_of(ch, percentiles, source) for ch in chunks)


def stats_from_task(
    folder: str | Path,
    *,
    max_cases: int | None = None,
    percentiles: tuple[float, float] = (0.5, 99.5),
) -> IntensityStats:
    """Foreground statistics of the first image channel of an MSD task's training cases.

    See :func:`channel_stats_from_task` (every channel).
    """
    return channel_stats_from_task(
        folder, max_cases=max_cases, percentiles=percentiles, channels=1
    )[0]


def channel_stats_from_task(
    folder: str | Path,
    *,
    max_cases: int | None = None,
    percentiles: tuple[float, float] = (0.5, 99.5),
    minmax: bool = False,
    channels: int | None = None,
) -> tuple[IntensityStats, ...]:
    """Foreground statistics per image channel of the training cases of an MSD task folder.

    Reads ``dataset.json`` (its ``"training"`` list of ``{"image", "label"}``
    paths relative to the folder) and every listed pair; a ``modality`` with
    several entries means a 4D image file holds that many channels.

    Parameters
    ----------
    folder : str or Path
        The task folder (``TaskXX_Name`` with ``dataset.json``).
    max_cases : int or None
        Use only the first cases.
    percentiles : (float, float)
        Clip percentiles.
    minmax : bool
        Min-max scale each channel of each image first (ROG's MR step).
    channels : int, optional
        Only the first ``channels`` channels (default: all that ``dataset.json`` names).
    """
    from napari_segeval.io import read_channels
    from napari_segeval.io._dataset_json import dataset_channels

    folder = Path(folder)
    ds = folder / "dataset.json"
    try:
        meta = json.loads(ds.read_text(encoding="utf-8"))
        training = meta["training"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReadError(f"{ds}: cannot read the training list of an MSD task ({exc})") from exc
    if max_cases is not None:
        training = training[:max_cases]
    n_all = max(len(dataset_channels(meta)), 1)
    n = n_all if channels is None else min(int(channels), n_all)

    def pairs():
        for item in training:
            case = read_channels(
                [folder / item["image"]],
                folder / item["label"],
                n_channels=n_all if n_all > 1 else None,
            )
            image = case.image if case.is_multichannel else case.image[None]
            yield image[:n], case.labels

    return channel_intensity_stats(
        pairs(), n, minmax=minmax, percentiles=percentiles, source=str(folder)
    )
