"""Failure detection as fd-shifts measures it: AURC, AUGRC, failure AUROC, recall.

A risk score is judged against the true risk ``1 - Dice``, tied scores as one block;
definitions and differences from fd-shifts: docs/protocols.md ("Failure detection").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

#: A structure (or a case's mean over structures) fails below this Dice.
FAILURE_BELOW_STRUCTURE = 0.75
#: A slice fails below this Dice.
FAILURE_BELOW_SLICE = 0.5
#: The share of items in the review list of :attr:`FailureDetection.recall_at_10`.
RECALL_FRACTION = 0.1


@dataclass(frozen=True)
class RiskCoverageCurve:
    """The points of a risk-coverage curve, in descending coverage, end point included.

    Attributes
    ----------
    coverage : tuple of float
        Share of the items kept, from 1 down to 0 (the end point).
    selective_risk : tuple of float
        Mean true risk of the kept items (the end point repeats the last value).
    generalized_risk : tuple of float
        Sum of the true risk of the kept items over all ``n`` items (0 at the end).
    """

    coverage: tuple[float, ...]
    selective_risk: tuple[float, ...]
    generalized_risk: tuple[float, ...]

    @property
    def aurc(self) -> float:
        """Area under the selective risk, trapezoid rule (NaN for no points).

        Examples
        --------
        >>> RiskCoverageCurve((1.0, 0.5, 0.0), (0.5, 0.0, 0.0), (0.5, 0.0, 0.0)).aurc
        0.125
        """
        return _trapezoid(self.coverage, self.selective_risk)

    @property
    def augrc(self) -> float:
        """Area under the generalized risk, trapezoid rule (NaN for no points).

        Examples
        --------
        >>> RiskCoverageCurve((1.0, 0.0), (0.5, 0.5), (0.5, 0.0)).augrc
        0.25
        """
        return _trapezoid(self.coverage, self.generalized_risk)

    def to_dict(self) -> dict[str, list[float]]:
        """The three columns as lists (for JSON).

        Examples
        --------
        >>> RiskCoverageCurve((1.0, 0.0), (0.5, 0.5), (0.5, 0.0)).to_dict()["coverage"]
        [1.0, 0.0]
        """
        return {f.name: list(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class FailureDetection:
    """How well a risk score finds the failures (definitions: docs/protocols.md).

    Attributes
    ----------
    n : int
        Items scored (those with a Dice value).
    n_failures : int
        Items with ``Dice < failure_below``.
    failure_below : float
        The Dice below which an item fails.
    aurc, optimal_aurc, random_aurc, excess_aurc, normalised_aurc : float
        Area under the risk-coverage curve, of the oracle, of a random order,
        ``aurc - optimal_aurc``, ``(random - aurc) / (random - optimal)``.
    augrc, optimal_augrc : float
        Area under the generalized risk-coverage curve, and the oracle's.
    failure_auroc : float
        AUROC of the score for failures against successes, ties count half.
    spearman : float
        Rank correlation of the score with the true risk ``1 - Dice``.
    recall_at_10 : float
        Share of all failures among the ``ceil(0.1 * n)`` riskiest items.
    curve : RiskCoverageCurve
        The score's curve, for plotting.
    """

    n: int
    n_failures: int
    failure_below: float
    aurc: float
    optimal_aurc: float
    random_aurc: float
    excess_aurc: float
    normalised_aurc: float
    augrc: float
    optimal_augrc: float
    failure_auroc: float
    spearman: float
    recall_at_10: float
    curve: RiskCoverageCurve

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values for JSON: the numbers, then the curve's three lists.

        NaN stays NaN (the project's writers store it as ``null``).

        Examples
        --------
        >>> d = failure_detection([0.2, 0.8], [0.9, 0.1], failure_below=0.5).to_dict()
        >>> d["failure_auroc"], d["coverage"], d["selective_risk"]
        (1.0, [1.0, 0.5, 0.0], [0.5, 0.1, 0.1])
        """
        out: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name != "curve"
        }
        return {**out, **self.curve.to_dict()}


def _trapezoid(x, y) -> float:
    if len(x) == 0:
        return math.nan
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return float(np.sum((xs[:-1] - xs[1:]) * (ys[:-1] + ys[1:]) / 2.0))


def _pair(score: ArrayLike, other: ArrayLike, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The scores (NaN: the riskiest, ``inf``) and ``other``, float64 and of one shape."""
    s = np.asarray(score, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"score must be one-dimensional, got shape {s.shape}")
    s = np.where(np.isnan(s), np.inf, s)
    o = np.asarray(other, dtype=np.float64)
    if o.shape != s.shape:
        raise ValueError(f"score {s.shape} and {name} {o.shape} differ in shape")
    return s, o


def _blocks(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order (ascending score) and the exclusive end of each block of equal scores."""
    order = np.argsort(s, kind="stable")
    ss = s[order]
    ends = np.flatnonzero(np.r_[ss[1:] != ss[:-1], True]) + 1
    return order, ends


def risk_coverage_curve(score: ArrayLike, risk: ArrayLike) -> RiskCoverageCurve:
    """The risk-coverage curve of ``score`` (higher = riskier) against the true ``risk``.

    Tied scores are accepted or set aside as one block; the curve ends at coverage 0.

    Parameters
    ----------
    score : array_like, shape (n,)
        Estimated risk per item; NaN counts as the riskiest.
    risk : array_like, shape (n,)
        True risk per item, ``1 - Dice`` (no NaN).

    Returns
    -------
    RiskCoverageCurve
        Empty tuples for ``n = 0``.

    Examples
    --------
    >>> c = risk_coverage_curve([0.9, 0.9, 0.5, 0.1], [0.8, 0.2, 0.4, 0.0])
    >>> c.coverage, c.generalized_risk
    ((1.0, 0.5, 0.25, 0.0), (0.35, 0.1, 0.0, 0.0))
    >>> round(c.aurc, 6), round(c.augrc, 6)
    (0.1625, 0.125)
    """
    s, r = _pair(score, risk, "risk")
    if np.isnan(r).any():
        raise ValueError("risk must not contain NaN (drop those items first)")
    n = s.size
    if n == 0:
        return RiskCoverageCurve((), (), ())
    order, ends = _blocks(s)
    kept_sum = np.cumsum(r[order])[ends - 1][::-1]  # descending coverage
    kept = ends[::-1].astype(np.float64)
    coverage = np.r_[kept / n, 0.0]
    selective = kept_sum / kept
    selective = np.r_[selective, selective[-1]]
    generalized = np.r_[kept_sum / n, 0.0]
    return RiskCoverageCurve(
        tuple(coverage.tolist()), tuple(selective.tolist()), tuple(generalized.tolist())
    )


def failure_auroc(score: ArrayLike, failed: ArrayLike) -> float:
    """AUROC of ``score`` for separating failures from successes; ties count half.

    Parameters
    ----------
    score : array_like, shape (n,)
        Estimated risk per item; NaN counts as the riskiest.
    failed : array_like of bool, shape (n,)
        Whether each item failed.

    Returns
    -------
    float
        ``P(score of a failure > score of a success)`` plus half the probability of
        a tie, over all failure-success pairs; NaN without failures or successes.

    Examples
    --------
    >>> failure_auroc([0.9, 0.9, 0.5, 0.1], [True, False, True, False])
    0.625
    >>> failure_auroc([0.3, 0.2], [True, True])
    nan
    """
    s, f = _pair(score, failed, "failed")
    fail = f.astype(bool)
    n_fail, n_ok = int(fail.sum()), int((~fail).sum())
    if n_fail == 0 or n_ok == 0:
        return math.nan
    from scipy import stats

    ranks = stats.rankdata(s)  # 1-based, equal scores sharing their mean rank
    u = float(ranks[fail].sum()) - n_fail * (n_fail + 1) / 2.0
    return u / (n_fail * n_ok)


def review_length(n: int, fraction: float = RECALL_FRACTION) -> int:
    """Items in the review list of :func:`recall_at`: ``ceil(fraction * n)``.

    A tolerance of ``1e-9`` absorbs the rounding of the product: ``0.07 * 100`` is
    ``7.000000000000001`` in floating point, and 7 items are reviewed, not 8.

    Examples
    --------
    >>> [review_length(n) for n in (0, 1, 9, 10, 11, 30, 31)]
    [0, 1, 1, 1, 2, 3, 4]
    >>> review_length(100, 0.07)
    7
    """
    return max(0, math.ceil(fraction * n - 1e-9))


def recall_at(score: ArrayLike, failed: ArrayLike, fraction: float = RECALL_FRACTION) -> float:
    """Share of all failures among the riskiest ``fraction`` of the items.

    The list is :func:`review_length` items long. A block of tied scores that
    straddles its end counts its failures in proportion to the places left for it.

    Parameters
    ----------
    score, failed
        As in :func:`failure_auroc`.
    fraction : float
        Share of the items reviewed, in ``(0, 1]``.

    Returns
    -------
    float
        In ``[0, 1]``; NaN when nothing failed.

    Examples
    --------
    Ten items: the list is one place long and the two riskiest tie, one failed:

    >>> s = [0.9, 0.9, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.0, 0.0]
    >>> f = [True, False, True, False, False, False, False, False, False, False]
    >>> recall_at(s, f)
    0.25
    >>> recall_at(s, f, fraction=0.3)
    1.0
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    s, f = _pair(score, failed, "failed")
    fail = f.astype(bool)
    n_fail = int(fail.sum())
    if n_fail == 0:
        return math.nan
    k = review_length(s.size, fraction)
    order, ends = _blocks(-s)  # riskiest first
    starts = np.r_[0, ends[:-1]]
    per_block = np.add.reduceat(fail[order].astype(np.float64), starts)
    share = np.clip((k - starts) / (ends - starts), 0.0, 1.0)
    return float(np.sum(per_block * share)) / n_fail


def _spearman(s: np.ndarray, r: np.ndarray) -> float:
    if s.size < 2 or np.all(s == s[0]) or np.all(r == r[0]):
        return math.nan
    from scipy import stats

    return float(stats.spearmanr(s, r).statistic)


def failure_detection(
    score: ArrayLike, dice: ArrayLike, *, failure_below: float
) -> FailureDetection:
    """Every failure-detection measure of a risk ``score`` against the true ``dice``.

    Parameters
    ----------
    score : array_like, shape (n,)
        Estimated risk per item, higher = more likely wrong (any real scale);
        NaN counts as the riskiest.
    dice : array_like, shape (n,)
        Dice per item in ``[0, 1]``; items with a NaN Dice are left out.
    failure_below : float
        An item fails when its Dice is below this, in ``(0, 1]``:
        :data:`FAILURE_BELOW_STRUCTURE` or :data:`FAILURE_BELOW_SLICE`.

    Returns
    -------
    FailureDetection
        NaN measures and an empty curve when no item has a Dice.

    Raises
    ------
    ValueError
        For arrays of different shapes, a Dice outside ``[0, 1]`` or a threshold
        outside ``(0, 1]``.

    Examples
    --------
    A perfect score, a constant one and an inverted one:

    >>> dice = [1.0, 0.9, 0.6, 0.3]
    >>> risk = [1 - d for d in dice]
    >>> perfect = failure_detection(risk, dice, failure_below=0.75)
    >>> perfect.normalised_aurc, perfect.failure_auroc, perfect.recall_at_10, perfect.n_failures
    (1.0, 1.0, 0.5, 2)
    >>> failure_detection([0.5] * 4, dice, failure_below=0.75).normalised_aurc
    0.0
    >>> inverted = failure_detection(dice, dice, failure_below=0.75)
    >>> round(inverted.normalised_aurc, 4), inverted.failure_auroc, inverted.spearman
    (-1.14, 0.0, -1.0)
    """
    if not 0.0 < float(failure_below) <= 1.0:
        raise ValueError(f"failure_below must be in (0, 1], got {failure_below}")
    s, d = _pair(score, dice, "dice")
    keep = ~np.isnan(d)
    s, d = s[keep], d[keep]
    if ((d < 0.0) | (d > 1.0)).any():
        raise ValueError("dice must be in [0, 1]")
    risk = 1.0 - d
    failed = d < float(failure_below)
    curve = risk_coverage_curve(s, risk)
    oracle = risk_coverage_curve(risk, risk)
    aurc, optimal = curve.aurc, oracle.aurc
    random = curve.selective_risk[0] if curve.coverage else math.nan
    gap = random - optimal
    constant_risk = d.size == 0 or bool(np.all(risk == risk[0]))
    return FailureDetection(
        n=int(d.size),
        n_failures=int(failed.sum()),
        failure_below=float(failure_below),
        aurc=aurc,
        optimal_aurc=optimal,
        random_aurc=random,
        excess_aurc=aurc - optimal,
        normalised_aurc=math.nan if constant_risk else (random - aurc) / gap,
        augrc=curve.augrc,
        optimal_augrc=oracle.augrc,
        failure_auroc=failure_auroc(s, failed),
        spearman=_spearman(s, risk),
        recall_at_10=recall_at(s, failed, RECALL_FRACTION),
        curve=curve,
    )
