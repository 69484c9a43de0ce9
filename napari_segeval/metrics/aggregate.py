"""Tidy results tables (case x structure x condition) and their summaries."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import overload

import numpy as np

from napari_segeval._atomic import atomic_open
from napari_segeval._errors import ReadError
from napari_segeval._names import CLEAN
from napari_segeval.metrics.catalog import as_float, mean, mean_std, percentiles, scored

KEY_COLUMNS = ("case", "structure", "condition")


class ResultsTable:
    """Rows of metrics, one per case x structure x condition (plus any extra columns)."""

    def __init__(self, rows: Iterable[Mapping] | None = None) -> None:
        self.rows: list[dict] = [dict(r) for r in rows] if rows is not None else []

    def add(self, case: str, structure: str, condition: str = CLEAN, **values) -> None:
        """Append one row; ``values`` are metric columns and extra parameters."""
        self.rows.append({"case": case, "structure": structure, "condition": condition, **values})

    def extend(self, rows: Iterable[Mapping]) -> None:
        """Append rows that already hold ``case``, ``structure`` and ``condition``."""
        self.rows.extend(dict(r) for r in rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    @property
    def columns(self) -> list[str]:
        """Key columns first, then the other columns in order of first appearance."""
        cols = list(KEY_COLUMNS)
        for row in self.rows:
            cols.extend(k for k in row if k not in cols)
        return cols

    def to_csv(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write the table as CSV atomically (temp file + rename).

        Raises
        ------
        WriteError
            The file exists and ``overwrite`` is False, or it cannot be written.
        """
        path = Path(path)
        cols = self.columns
        with atomic_open(path, "w", overwrite=overwrite, newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=cols, restval="")
            writer.writeheader()
            writer.writerows({k: _fmt(row.get(k, "")) for k in cols} for row in self.rows)
        return path

    @classmethod
    def from_csv(cls, path: str | os.PathLike) -> ResultsTable:
        """Read a table written by :meth:`to_csv` (numbers come back as floats)."""
        path = Path(path)
        try:
            with open(path, newline="", encoding="utf-8") as fh:
                reader = csv.DictReader(fh)
                if reader.fieldnames is None or not set(KEY_COLUMNS) <= set(reader.fieldnames):
                    raise ReadError(f"{path}: not a results table (needs columns {KEY_COLUMNS})")
                rows = [{k: _parse(k, v) for k, v in r.items() if v != ""} for r in reader]
        except OSError as exc:
            raise ReadError(f"{path}: cannot read CSV ({exc})") from exc
        return cls(rows)


def _fmt(v):
    return repr(v) if isinstance(v, float) else v


def _parse(key: str, value: str):
    if key in KEY_COLUMNS:
        return value
    try:
        return float(value)
    except ValueError:
        return value


def _stats(values: list[float]) -> dict:
    valid = scored(values)
    q1, med, q3, lo, hi = percentiles(valid, [25, 50, 75, 0, 100])
    return {
        "n": int(valid.size),
        "n_nan": len(values) - int(valid.size),
        **mean_std(valid),
        **{"median": float(med), "q1": float(q1), "q3": float(q3), "iqr": float(q3 - q1)},
        **{"min": float(lo), "max": float(hi)},
    }


def summarize(
    rows: Iterable[Mapping], metric: str = "dice", by: Sequence[str] = ("structure", "condition")
) -> list[dict]:
    """Mean, std (ddof=1), median, Q1, Q3, IQR, min, max of a metric per group.

    NaN values are excluded from the statistics and counted in ``n_nan``, ±inf
    kept (the rule of :mod:`napari_segeval.metrics.catalog`); rows without the
    metric are skipped. Quartiles use linear interpolation.
    """
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        if metric not in row:
            continue
        key = tuple(row.get(k) for k in by)
        groups.setdefault(key, []).append(as_float(row[metric]))
    return [{**dict(zip(by, k)), "metric": metric, **_stats(v)} for k, v in groups.items()]


def kfold_summary(rows: Iterable[Mapping], metric: str = "dice", fold_key: str = "fold") -> dict:
    """Per-fold means of a metric, then their mean and std (ddof=1) across folds."""
    per: dict = {}
    for row in rows:
        if metric in row and fold_key in row:
            per.setdefault(row[fold_key], []).append(row[metric])
    folds = [
        {"fold": fold, "n": int(scored(per[fold]).size), "mean": mean(per[fold])}
        for fold in sorted(per, key=str)
    ]
    return {"folds": folds, **mean_std(f["mean"] for f in folds)}


@overload
def percent(value: float) -> float: ...
@overload
def percent(value: np.ndarray) -> np.ndarray: ...
def percent(value: float | np.ndarray) -> float | np.ndarray:
    """A fraction in percent (0.9 -> 90.0), keeping NaN."""
    return value * 100.0 if isinstance(value, np.ndarray) else float(value) * 100.0


def fraction(values: Iterable[bool]) -> float:
    """Fraction of true values (e.g. robust cases), NaN for no values."""
    a = np.asarray(list(values), bool)
    return float(a.mean()) if a.size else math.nan


def robust_threshold(clean_dices: Iterable[float | None], factor: float = 0.5) -> float:
    """The robust-case threshold of a task: ``factor`` x the mean clean Dice of its cases.

    The rule of Daza et al. (2021): a case is robust to an attack when its attacked Dice
    stays above half the task's mean clean Dice. Compute it **once per task** and use it
    unchanged for every attack (the published code re-multiplies it per attack, which
    compounds).

    Parameters
    ----------
    clean_dices : iterable of float
        One clean Dice per case (the mean over the case's structures).
    factor : float
        Fraction of the mean clean Dice an attacked case must exceed.

    Returns
    -------
    float
        ``factor * mean`` of the finite values (NaN, +-inf and None are left out); NaN
        when none is left, and then no case is robust.
    """
    values = np.asarray([np.nan if v is None else float(v) for v in clean_dices], float)
    values = values[np.isfinite(values)]
    return float(factor) * float(values.mean()) if values.size else math.nan


def is_robust(attacked_dice: float | None, threshold: float) -> bool:
    """Whether an attacked case is robust: its Dice is *strictly* above the threshold.

    Parameters
    ----------
    attacked_dice : float
        The case's attacked Dice (mean over its structures).
    threshold : float
        From :func:`robust_threshold`, computed once for the task.

    Returns
    -------
    bool
        ``attacked_dice > threshold``. False when either is NaN, +-inf or None: an
        unknown Dice cannot be shown robust (it still counts in :func:`robust_fraction`).
    """
    if attacked_dice is None:
        return False
    a, t = float(attacked_dice), float(threshold)
    return math.isfinite(a) and math.isfinite(t) and a > t


def robust_fraction(attacked_dices: Iterable[float | None], threshold: float) -> float:
    """Fraction of cases robust under one attack (:func:`is_robust`); NaN for no cases."""
    return fraction(is_robust(v, threshold) for v in attacked_dices)


__all__ = [
    "ResultsTable",
    "fraction",
    "is_robust",
    "kfold_summary",
    "percent",
    "robust_fraction",
    "robust_threshold",
    "summarize",
]
