"""What each metric is, defined once (:data:`METRICS`), and the one rule for NaN and ±inf.

NaN is *no value*: left out of every aggregate and counted apart (``n_nan``). ±inf *is* a
value (the HD95 of a structure one map misses): it stays in, so a miss is not averaged away.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np


def as_float(value: Any) -> float:
    """A cell as a float: NaN for None, ``""`` and anything else that is no number.

    Examples
    --------
    >>> as_float("0.5"), as_float(None), as_float(""), as_float("inf"), as_float("abc")
    (0.5, nan, nan, inf, nan)
    """
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def scored(values: Iterable[Any]) -> np.ndarray:
    """The values that count in an aggregate: read with :func:`as_float`, NaN left out."""
    a = np.asarray([as_float(v) for v in values], float)
    return a[~np.isnan(a)]


def mean(values: Iterable[Any]) -> float:
    """The mean of :func:`scored` values: NaN left out, inf kept; NaN when none is left."""
    a = scored(values)
    return float(a.mean()) if a.size else math.nan


def mean_std(values: Iterable[float]) -> dict[str, float]:
    """Mean and std (ddof=1; 0.0 for one value) of the :func:`scored` values.

    Examples
    --------
    >>> mean_std([0.5, 1.0, float("nan")]), mean_std([2.0]), mean_std([])
    ({'mean': 0.75, 'std': 0.3535533905932738}, {'mean': 2.0, 'std': 0.0}, {'mean': nan, 'std': nan})
    """
    a = scored(values)
    return {
        "mean": float(a.mean()) if a.size else math.nan,
        "std": float(a.std(ddof=1)) if a.size > 1 else (0.0 if a.size else math.nan),
    }


def percentiles(values: Iterable[Any], q: Iterable[float]) -> np.ndarray:
    """``numpy.percentile`` (linear) of the :func:`scored` values, with the rule for inf.

    Between a number and an infinite value numpy gives NaN (``inf * 0``); the rule's
    answer is the infinite value (NaN between ``-inf`` and ``inf``).
    """
    a, qs = scored(values), np.asarray(list(q), float)
    if not a.size:
        return np.full(qs.shape, math.nan)
    with np.errstate(invalid="ignore"):
        out = np.percentile(a, qs)  # NaN only where it met an infinite value
        if np.isnan(out).any():
            a.sort()
            pos = qs / 100 * (a.size - 1)
            low = np.floor(pos).astype(int)
            lo, hi = a[low], a[np.minimum(low + 1, a.size - 1)]
            # at lo itself, lo; else lo + hi: the infinite one, or NaN for -inf + inf
            out = np.where(np.isnan(out), np.where((pos == low) | (lo == hi), lo, lo + hi), out)
    return out


@dataclass(frozen=True)
class Metric:
    """One metric: how it is named, shown and read.

    Attributes
    ----------
    name : str
        Its key: the column of ``results.csv`` and of a structure row.
    title : str
        Its short name, the column header of the viewer's tables (``"HD95"``).
    doc : str
        What it holds: the column's documentation and the header's tooltip.
    unit : str
        ``"mm"``, ``"ml"``, or ``""`` for a ratio.
    digits : int
        Decimals the viewer shows (text tables and the report show 4 of every number).
    higher_is_better : bool or None
        Its direction; None for a quantity that is neither (a volume).
    signed : bool
        A difference, shown with its sign (``+0.120``).
    """

    name: str
    title: str
    doc: str
    unit: str = ""
    digits: int = 3
    higher_is_better: bool | None = True
    signed: bool = False

    @property
    def header(self) -> str:
        """The viewer's column header, with the unit (``"HD95 mm"``)."""
        return f"{self.title} {self.unit}".rstrip()

    @property
    def text_header(self) -> str:
        """A plain-text table's column header (``"hd95_mm"``)."""
        return "_".join(p for p in (self.title.lower(), self.unit) if p)

    def text(self, value: Any, signed: bool | None = None) -> str:
        """``value`` as the viewer shows it: ``digits`` decimals, ``-`` for NaN, ``inf``.

        ``signed`` (default: the metric's own) shows a ``+`` on positive values.
        """
        v = as_float(value)
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        sign = "+" if (self.signed if signed is None else signed) else ""
        return f"{v:{sign}.{self.digits}f}"

    def worse(self, a: float, b: float) -> bool:
        """Whether ``a`` is strictly worse than ``b`` (never, for a metric without direction).

        Examples
        --------
        >>> METRICS["dice"].worse(0.5, 0.9), METRICS["hd95"].worse(0.5, 0.9)
        (True, False)
        """
        if self.higher_is_better is None:
            return False
        return a < b if self.higher_is_better else a > b


_MM: dict[str, Any] = dict(unit="mm", digits=1, higher_is_better=False)
_ML: dict[str, Any] = dict(unit="ml", digits=1, higher_is_better=None)

#: The metrics of one structure, in the order of its row (:func:`structure_table`); a
#: ratio (no unit, 3 decimals, higher is better) unless it says otherwise.
STRUCTURE_METRICS: tuple[Metric, ...] = (
    Metric("dice", "Dice", "Dice, 2|A∩B|/(|A|+|B|)"),
    Metric("iou", "IoU", "intersection over union"),
    Metric("precision", "Prec", "|A∩B|/|B| (B: the prediction)"),
    Metric("recall", "Recall", "|A∩B|/|A| (A: the reference)"),
    Metric("hd", "HD", "Hausdorff distance, mm", **_MM),
    Metric("hd95", "HD95", "95th percentile Hausdorff distance, mm", **_MM),
    Metric("assd", "ASSD", "average symmetric surface distance, mm", **_MM),
    Metric("nsd", "NSD", "normalized surface distance at the run's tolerance"),
    Metric("volume_ref_ml", "Ref", "the reference's volume (area for 2D), ml", **_ML),
    Metric("volume_pred_ml", "Pred", "the prediction's volume (area for 2D), ml", **_ML),
)
#: Scores not measured against the reference, and the Results panel's Dice change.
UNCERTAINTY = Metric("uncertainty", "Unc.", "the case's uncertainty score", higher_is_better=False)
RISK = Metric(
    "risk",
    "risk",
    "the estimated probability that the structure is wrong, from the model's own "
    "signals, without the reference (napari_segeval.uncertainty.risk)",
    higher_is_better=False,
)
DELTA_DICE = Metric(
    "delta_dice", "ΔDice", "attacked − clean Dice of the same case and structure", signed=True
)

#: Every metric, by name.
METRICS: dict[str, Metric] = {
    m.name: m for m in (*STRUCTURE_METRICS, DELTA_DICE, UNCERTAINTY, RISK)
}

__all__ = [
    "DELTA_DICE",
    "METRICS",
    "RISK",
    "STRUCTURE_METRICS",
    "UNCERTAINTY",
    "Metric",
    "as_float",
    "mean",
    "mean_std",
    "percentiles",
    "scored",
]
