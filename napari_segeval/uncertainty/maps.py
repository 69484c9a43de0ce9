"""Per-voxel uncertainty from probabilities: entropy, sample statistics, the result record."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def entropy(probs: np.ndarray, axis: int = 0, *, normalized: bool = False) -> np.ndarray:
    """Predictive entropy ``-sum p log p`` over the class axis (natural log).

    Parameters
    ----------
    probs : array
        Probabilities along ``axis``, clipped to ``[0, 1]`` (``0 log 0 = 0``).
    axis : int
        The class axis.
    normalized : bool
        Divide by ``log K`` (result in ``[0, 1]``; 0 for ``K = 1``).

    Returns
    -------
    numpy.ndarray
        float32, the input shape without ``axis``.
    """
    p = np.clip(np.asarray(probs, dtype=np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    h = -terms.sum(axis=axis)
    k = p.shape[axis]
    if normalized:
        h = h / math.log(k) if k > 1 else np.zeros_like(h)
    return np.clip(h, 0.0, None).astype(np.float32)


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """Normalised entropy of a foreground probability (``K = 2``, in ``[0, 1]``)."""
    p = np.asarray(p, dtype=np.float64)
    return entropy(np.stack([p, 1.0 - p]), axis=0, normalized=True)


class SampleStats:
    """Running mean, variance and mean entropy of probability samples (Welford).

    Parameters
    ----------
    binary : bool
        Samples are foreground probabilities: the entropy term is :func:`binary_entropy`;
        else the classes are the first axis of each sample.
    """

    def __init__(self, binary: bool = False) -> None:
        self.binary = binary
        self.n = 0
        self.mean: np.ndarray | None = None
        self._m2: np.ndarray | None = None
        self._entropy_sum: np.ndarray | None = None

    def add(self, probs: np.ndarray) -> None:
        """Add one sample (same shape every time)."""
        p = np.asarray(probs, dtype=np.float64)
        h = binary_entropy(p) if self.binary else entropy(p, 0, normalized=True)
        h = h.astype(np.float64)
        self.n += 1
        if self.mean is None:
            self.mean, self._m2, self._entropy_sum = p.copy(), np.zeros_like(p), h
            return
        if p.shape != self.mean.shape:
            raise ValueError(f"sample shape {p.shape} differs from {self.mean.shape}")
        delta = p - self.mean
        self.mean += delta / self.n
        self._m2 += delta * (p - self.mean)
        self._entropy_sum += h

    def variance(self) -> np.ndarray:
        """Population variance per element (zeros for a single sample)."""
        if self.mean is None or self._m2 is None:
            raise ValueError("no samples")
        return np.clip(self._m2 / self.n, 0.0, None)

    def mean_entropy(self) -> np.ndarray:
        """Mean over samples of the normalised entropy of each sample."""
        if self._entropy_sum is None:
            raise ValueError("no samples")
        return self._entropy_sum / self.n


@dataclass
class UncertaintyMaps:
    """Uncertainty of one case on the case's grid.

    Attributes
    ----------
    entropy : numpy.ndarray
        Normalised entropy of the mean prediction (promptable: the largest over
        structures of each one's binary entropy).
    variance : numpy.ndarray
        Population variance over the samples (``ddof = 0``): mean over classes (dense) or
        largest over structures (promptable).
    mean : numpy.ndarray
        ``(C, *spatial)`` mean probabilities: all classes (dense) or one foreground
        probability per structure (promptable).
    labels : numpy.ndarray
        Label map of the mean prediction.
    mutual_information : numpy.ndarray
        ``entropy - mean per-sample entropy`` (normalised units; >= 0 up to rounding).
    channels : tuple of int
        Label id of each channel of ``mean``.
    n_samples : int
        Samples drawn (1 when a method had nothing to sample).
    method : str
        ``"tta"``, ``"mc-dropout"`` or ``"prompt-jitter"``.
    params : dict
        The settings used (and the augmentation drawn for every sample).
    note : str
        Anything a person should know (for example "the model has no dropout").
    """

    entropy: np.ndarray
    variance: np.ndarray
    mean: np.ndarray
    labels: np.ndarray
    mutual_information: np.ndarray
    channels: tuple[int, ...]
    n_samples: int
    method: str
    params: dict = field(default_factory=dict)
    note: str = ""
