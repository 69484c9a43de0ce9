"""Per-voxel uncertainty from probabilities: entropy, sample statistics, the result record.

Everything here is numpy. The samplers (:mod:`.dense`, :mod:`.promptable`)
feed probability samples to a :class:`SampleStats` accumulator (running mean
and variance, so ``N`` samples never sit in memory together) and return an
:class:`UncertaintyMaps`.

Definitions
-----------
For class probabilities ``p_k`` (``K`` classes) the predictive entropy is
``H = -sum_k p_k log p_k`` (natural log, ``0 log 0 = 0``); normalised, it is
``H / log K`` in ``[0, 1]`` (1 = uniform). For a foreground probability ``p``
of one structure (promptable models) it is the binary case ``K = 2``.
With ``N`` samples ``p^(i)``: *mean prediction* ``p̄ = mean_i p^(i)``, total
uncertainty ``H(p̄)``, *variance* ``mean_k var_i p_k^(i)`` (population
variance, ``ddof = 0``), and *mutual information* ``H(p̄) - mean_i H(p^(i))``
(the part of the entropy due to disagreement between samples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def entropy(probs: np.ndarray, axis: int = 0, *, normalized: bool = False) -> np.ndarray:
    """Predictive entropy ``-sum p log p`` over the class axis (natural log).

    Parameters
    ----------
    probs : array
        Probabilities, summing to 1 along ``axis`` (values are clipped to
        ``[0, 1]``; ``0 log 0`` is taken as 0).
    axis : int
        The class axis.
    normalized : bool
        Divide by ``log K`` (``K`` = number of classes) so the result lies in
        ``[0, 1]``. With ``K = 1`` the entropy is 0.

    Returns
    -------
    numpy.ndarray
        float32, the input shape without ``axis``.

    Examples
    --------
    >>> p = np.array([[0.5, 1.0, 0.25], [0.5, 0.0, 0.75]])
    >>> entropy(p, normalized=True).round(4).tolist()
    [1.0, 0.0, 0.8113]
    >>> float(entropy(np.full((4, 1), 0.25))[0]) == float(np.float32(np.log(4)))
    True
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
    """Normalised entropy of a foreground probability (``K = 2``, in ``[0, 1]``).

    Examples
    --------
    >>> binary_entropy(np.array([0.0, 0.5, 1.0])).tolist()
    [0.0, 1.0, 0.0]
    """
    p = np.asarray(p, dtype=np.float64)
    return entropy(np.stack([p, 1.0 - p]), axis=0, normalized=True)


class SampleStats:
    """Running mean, variance and mean entropy of probability samples (Welford).

    Parameters
    ----------
    axis : int
        Class axis of each sample (for the entropy term).
    binary : bool
        Samples are foreground probabilities (no class axis): the entropy term
        is :func:`binary_entropy`.

    Examples
    --------
    >>> s = SampleStats()
    >>> for p in ([0.2, 0.8], [0.6, 0.4]):
    ...     s.add(np.array(p)[:, None])
    >>> s.n, s.mean.ravel().round(2).tolist(), s.variance().ravel().round(2).tolist()
    (2, [0.4, 0.6], [0.04, 0.04])
    """

    def __init__(self, axis: int = 0, binary: bool = False) -> None:
        self.axis = axis
        self.binary = binary
        self.n = 0
        self.mean: np.ndarray | None = None
        self._m2: np.ndarray | None = None
        self._entropy_sum: np.ndarray | None = None

    def add(self, probs: np.ndarray) -> None:
        """Add one sample (same shape every time)."""
        p = np.asarray(probs, dtype=np.float64)
        h = binary_entropy(p) if self.binary else entropy(p, self.axis, normalized=True)
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
        Normalised predictive entropy of the mean prediction, ``[0, 1]``,
        spatial shape. Promptable models: the largest over structures of the
        binary entropy of each structure's mean foreground probability.
    variance : numpy.ndarray
        Sample variance of the probabilities: mean over classes (dense) or the
        largest over structures (promptable). Zero when all samples agree.
    mean : numpy.ndarray
        ``(C, *spatial)`` mean probabilities: all classes (dense) or one
        foreground probability per structure (promptable); ``channels`` names them.
    labels : numpy.ndarray
        Label map of the mean prediction.
    mutual_information : numpy.ndarray
        ``entropy - mean per-sample entropy`` (normalised units; >= 0 up to rounding).
    channels : tuple of int
        Label id of each channel of ``mean``.
    n_samples : int
        Samples drawn (1 when a method had nothing to sample).
    method : str
        ``"single"``, ``"tta"``, ``"mc-dropout"`` or ``"prompt-jitter"``.
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

    def structure_probability(self, label: int) -> np.ndarray:
        """Mean probability of structure ``label`` (a channel of :attr:`mean`)."""
        return self.mean[self.channels.index(int(label))]


def maps_from_probabilities(probs: np.ndarray, labels: np.ndarray | None = None) -> UncertaintyMaps:
    """Single-pass maps (entropy only, zero variance) of ``(K, *spatial)`` probabilities.

    Examples
    --------
    >>> m = maps_from_probabilities(np.array([[0.5, 0.9], [0.5, 0.1]]))
    >>> m.entropy.round(3).tolist(), m.labels.tolist(), float(m.variance.max())
    ([1.0, 0.469], [0, 0], 0.0)
    """
    p = np.asarray(probs, dtype=np.float32)
    h = entropy(p, 0, normalized=True)
    lab = p.argmax(0).astype(np.uint8) if labels is None else np.asarray(labels)
    return UncertaintyMaps(
        h, np.zeros_like(h), p, lab, np.zeros_like(h), tuple(range(p.shape[0])), 1, "single"
    )


__all__ = ["SampleStats", "UncertaintyMaps", "binary_entropy", "entropy", "maps_from_probabilities"]
