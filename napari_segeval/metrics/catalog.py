"""What each metric is, defined once: its column, title, unit, display, direction.

Every place that names, shows, reads or averages a metric reads it from :data:`METRICS`:
the columns of ``results.csv`` (:mod:`napari_segeval.evaluation.rows`), the keys of a
structure row (:data:`STRUCTURE_METRICS`, :func:`~napari_segeval.metrics.structure_table`),
the Results and Dice panels, ``segeval metrics``' text table and the summaries.

**The rule for NaN and ±inf**, the same for every metric. A value is read with
:func:`as_float` (None, ``""`` and text that is no number are NaN; ``"inf"``, as the case
records store infinity, is inf). NaN means *no value* (nothing to measure, a missing
cell): it is left out of every mean, median and quartile, and counted apart (``n_nan`` of
:func:`~napari_segeval.metrics.summarize`). ±inf *is* a value (the HD95 of a structure
one map misses entirely): it stays in, so a mean over it is inf and a missed structure is
not averaged away, and a median or quartile beside it is inf, not numpy's NaN
(:func:`scored`, :func:`mean`, :func:`percentiles`). This is the rule the summaries of
``segeval evaluate`` have always followed, so the numbers and reports of results folders
written before stay identical; the robustness summary of ``segeval attack``, which left
inf out, averages Dice, never infinite.
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
    """The values that count in an aggregate: read with :func:`as_float`, NaN left out.

    ±inf stays (the module's rule).

    Examples
    --------
    >>> scored([0.5, None, "nan", "inf", 2]).tolist()
    [0.5, inf, 2.0]
    """
    a = np.asarray([as_float(v) for v in values], float)
    return a[~np.isnan(a)]


def mean(values: Iterable[Any]) -> float:
    """The mean of :func:`scored` values: NaN left out, inf kept; NaN when none is left.

    Examples
    --------
    >>> mean([0.8, float("nan"), 0.6]), mean([1.0, "inf"]), mean([None])
    (0.7, inf, nan)
    """
    a = scored(values)
    return float(a.mean()) if a.size else math.nan


def percentiles(values: Iterable[Any], q: Iterable[float]) -> np.ndarray:
    """Percentiles ``q`` (linear interpolation) of the :func:`scored` values.

    ``numpy.percentile``'s, except beside an infinite value: there numpy gives NaN
    (``inf * 0``), and the rule's answer is the infinite value (the median of
    ``1, 2, inf`` is 2, its third quartile inf); between ``-inf`` and ``inf`` it is NaN.

    Examples
    --------
    >>> percentiles([1.0, 2.0, "inf", None], [50, 75, 100]).tolist()
    [2.0, inf, inf]
    """
    a = scored(values)
    qs = np.asarray(list(q), float)
    if not a.size:
        return np.full(qs.shape, math.nan)
    with np.errstate(invalid="ignore"):
        out = np.percentile(a, qs)
        if np.isinf(a).any():  # NaN only where numpy met inf; the rest stays numpy's
            a.sort()
            pos = qs / 100 * (a.size - 1)
            low = np.floor(pos).astype(int)
            lo, hi = a[low], a[np.minimum(low + 1, a.size - 1)]
            towards = np.where(np.isinf(lo) & np.isinf(hi) & (lo != hi), math.nan, lo)
            towards = np.where(np.isinf(hi) & ~np.isinf(lo), hi, towards)
            out = np.where(np.isnan(out), np.where(pos == low, lo, towards), out)
    return out


@dataclass(frozen=True)
class Metric:
    """One metric: how it is named, shown and read.

    Attributes
    ----------
    name : str
        Its key: the column of ``results.csv`` and of a structure row.
    title : str
        Its name for people (``"Hausdorff distance, 95th percentile"``).
    short : str
        Its column header in the viewer's tables (``"HD95"``), followed by the unit.
    doc : str
        What it holds: the column's documentation and the header's tooltip.
    unit : str
        ``"mm"``, ``"ml"``, or ``""`` for a ratio.
    digits : int
        Decimals shown in the viewer's tables (the text tables and the report show 4).
    higher_is_better : bool or None
        Its direction; None for a quantity that is neither (a volume).
    signed : bool
        A difference, shown with its sign (``+0.120``).
    """

    name: str
    title: str
    short: str
    doc: str
    unit: str = ""
    digits: int = 3
    higher_is_better: bool | None = True
    signed: bool = False

    @property
    def header(self) -> str:
        """The viewer's column header: ``short`` and the unit.

        Examples
        --------
        >>> METRICS["hd95"].header, METRICS["dice"].header
        ('HD95 mm', 'Dice')
        """
        return f"{self.short} {self.unit}".rstrip()

    @property
    def text_header(self) -> str:
        """The header of a plain-text table: ``short`` in lower case and the unit.

        Examples
        --------
        >>> METRICS["hd95"].text_header, METRICS["volume_pred_ml"].text_header
        ('hd95_mm', 'pred_ml')
        """
        return "_".join(p for p in (self.short.lower(), self.unit) if p)

    def text(self, value: Any, signed: bool | None = None) -> str:
        """``value`` as the viewer shows it: ``digits`` decimals, ``-`` for NaN, ``inf``.

        ``signed`` (default: the metric's own) shows a ``+`` on positive values.

        Examples
        --------
        >>> d = METRICS["dice"]
        >>> d.text(0.91234), d.text(None), d.text("inf"), d.text(-math.inf), d.text(0.1, True)
        ('0.912', '-', 'inf', '-inf', '+0.100')
        >>> METRICS["hd95"].text(3.14159), METRICS["delta_dice"].text(0.25)
        ('3.1', '+0.250')
        """
        v = as_float(value)
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        sign = "+" if (self.signed if signed is None else signed) else ""
        return f"{v:{sign}.{self.digits}f}"

    def worse(self, a: float, b: float) -> bool:
        """Whether ``a`` is strictly worse than ``b`` (False for a metric without direction).

        Examples
        --------
        >>> METRICS["dice"].worse(0.5, 0.9), METRICS["hd95"].worse(0.5, 0.9)
        (True, False)
        """
        if self.higher_is_better is None:
            return False
        return a < b if self.higher_is_better else a > b


_MM = "mm"
_RATIO = dict(digits=3, higher_is_better=True)
_DISTANCE = dict(unit=_MM, digits=1, higher_is_better=False)
_VOLUME = dict(unit="ml", digits=1, higher_is_better=None)

#: The metrics of one structure, in the order of its row (:func:`structure_table`).
STRUCTURE_METRICS: tuple[Metric, ...] = (
    Metric("dice", "Dice", "Dice", "Dice, 2|A∩B|/(|A|+|B|)", **_RATIO),
    Metric("iou", "Intersection over union", "IoU", "intersection over union", **_RATIO),
    Metric("precision", "Precision", "Prec", "|A∩B|/|B| (B: the prediction)", **_RATIO),
    Metric("recall", "Recall", "Recall", "|A∩B|/|A| (A: the reference)", **_RATIO),
    Metric("hd", "Hausdorff distance", "HD", "Hausdorff distance, mm", **_DISTANCE),
    Metric(
        "hd95",
        "Hausdorff distance, 95th percentile",
        "HD95",
        "95th percentile Hausdorff distance, mm",
        **_DISTANCE,
    ),
    Metric(
        "assd",
        "Average symmetric surface distance",
        "ASSD",
        "average symmetric surface distance, mm",
        **_DISTANCE,
    ),
    Metric(
        "nsd",
        "Normalized surface Dice",
        "NSD",
        "normalized surface distance at the run's tolerance",
        **_RATIO,
    ),
    Metric(
        "volume_ref_ml",
        "Reference volume",
        "Ref",
        "the reference's volume (area for 2D), ml",
        **_VOLUME,
    ),
    Metric(
        "volume_pred_ml",
        "Predicted volume",
        "Pred",
        "the prediction's volume (area for 2D), ml",
        **_VOLUME,
    ),
)

#: Scores of a case or structure that are not measured against the reference.
UNCERTAINTY = Metric(
    "uncertainty", "Uncertainty", "Unc.", "the case's uncertainty score", higher_is_better=False
)
RISK = Metric(
    "risk",
    "Risk of failure",
    "risk",
    "the estimated probability that the structure is wrong, from the model's own "
    "signals, without the reference (napari_segeval.uncertainty.risk)",
    higher_is_better=False,
)
#: Attacked - clean Dice of the same case, structure, model and round (the Results panel).
DELTA_DICE = Metric(
    "delta_dice",
    "Dice change under attack",
    "ΔDice",
    "attacked − clean Dice of the same case and structure",
    signed=True,
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
    "percentiles",
    "scored",
]
