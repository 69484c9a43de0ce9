"""Protocol aggregations over result rows, built on :mod:`napari_segeval.metrics.aggregate`.

Every function takes the ok rows of a run (dicts with ``case``, ``structure``,
``condition`` and metric columns) and returns plain JSON-able dicts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from napari_segeval.metrics import (
    kfold_summary,
    percent,
    robust_fraction,
    robust_threshold,
    summarize,
)


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _nanmean(values: Iterable[float]) -> float:
    a = np.asarray([_f(v) for v in values], float)
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else math.nan


def case_means(rows: Iterable[Mapping], metric: str = "dice",
               include: Sequence[str] | None = None) -> dict[tuple, float]:
    """``(case, condition) -> mean of metric over structures`` (NaN skipped).

    Examples
    --------
    >>> rows = [{"case": "a", "condition": "clean", "structure": s, "dice": d}
    ...         for s, d in (("liver", 0.8), ("spleen", 0.6))]
    >>> case_means(rows)
    {('a', 'clean'): 0.7}
    """
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        if include is not None and r.get("structure") not in include:
            continue
        if metric in r:
            groups.setdefault((r["case"], r["condition"]), []).append(_f(r[metric]))
    return {k: _nanmean(v) for k, v in groups.items()}


def robustness(rows: Sequence[Mapping], *, clean: str = "clean", metric: str = "dice",
               factor: float = 0.5) -> dict:
    """``msd-robust`` numbers: per-structure means, task means, Dice drop, robust fraction.

    A case is robust under an attack when its attacked Dice (mean over
    structures) is strictly above ``factor`` x the task's mean clean Dice (the
    mean over cases of the clean case Dice), computed once: the rule of
    :func:`napari_segeval.metrics.robust_threshold` and
    :func:`napari_segeval.metrics.is_robust` (a case whose attacked Dice is NaN
    counts as not robust).

    Examples
    --------
    >>> rows = [{"case": c, "structure": "liver", "condition": k, "dice": d}
    ...         for c, k, d in [("a", "clean", 0.9), ("b", "clean", 0.7),
    ...                         ("a", "pgd", 0.5), ("b", "pgd", 0.2)]]
    >>> r = robustness(rows)
    >>> r["task_mean"]["clean"], r["robust_fraction"]["pgd"], round(r["dice_drop"]["liver"]["pgd"], 2)
    (0.8, 0.5, 0.45)
    """
    per_structure = summarize(rows, metric, by=("structure", "condition"))
    means = case_means(rows, metric)
    conditions = sorted({c for _, c in means}, key=lambda c: (c != clean, c))
    task_mean = {c: _nanmean(v for (_, cc), v in means.items() if cc == c) for c in conditions}
    clean_by_structure = {s["structure"]: s["mean"] for s in per_structure
                          if s["condition"] == clean}
    drop: dict[str, dict] = {}
    for s in per_structure:
        if s["condition"] != clean and s["structure"] in clean_by_structure:
            drop.setdefault(s["structure"], {})[s["condition"]] = (
                clean_by_structure[s["structure"]] - s["mean"])
    threshold = robust_threshold((v for (_, c), v in means.items() if c == clean), factor)
    robust = {c: robust_fraction((v for (_, cc), v in means.items() if cc == c), threshold)
              for c in conditions if c != clean}
    return {"metric": metric, "per_structure": per_structure, "task_mean": task_mean,
            "task_dice_drop": {c: task_mean.get(clean, math.nan) - v
                               for c, v in task_mean.items() if c != clean},
            "dice_drop": drop, "robust_threshold": threshold, "robust_factor": factor,
            "robust_fraction": robust}


def median_iqr(rows: Sequence[Mapping], metrics: Sequence[str] = ("dice", "nsd"),
               task_key: str = "task") -> dict:
    """MedSAM2 aggregation: median and IQR per structure, per task and over tasks.

    ``over_tasks`` pools every instance of every task; ``over_task_medians``
    summarizes the per-task medians.

    Examples
    --------
    >>> rows = [{"task": "t", "structure": "liver", "condition": "clean", "dice": d}
    ...         for d in (0.7, 0.8, 0.9)]
    >>> s = median_iqr(rows, ("dice",))
    >>> s["dice"]["per_task"][0]["median"], round(s["dice"]["over_tasks"]["iqr"], 3)
    (0.8, 0.1)
    """
    out = {}
    for m in metrics:
        pooled = summarize(({**r, "_all": "all"} for r in rows), m, by=("_all",))
        per_task = summarize(rows, m, by=(task_key,))
        task_medians = [{"_all": "all", m: t["median"]} for t in per_task]
        out[m] = {
            "per_structure": summarize(rows, m, by=(task_key, "structure")),
            "per_task": per_task,
            "over_tasks": _drop_key(pooled[0]) if pooled else {},
            "over_task_medians": _drop_key(summarize(task_medians, m, by=("_all",))[0])
            if task_medians else {},
        }
    return out


def _drop_key(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "_all"}


def percent_scores(rows: Sequence[Mapping], metrics: Sequence[str] = ("dice", "iou"),
                   include: Sequence[str] | None = None) -> dict:
    """Mean over cases of the per-case class average, in percent, for each metric.

    Examples
    --------
    >>> rows = [{"case": "a", "condition": "clean", "structure": "x", "dice": 0.5, "iou": 0.25}]
    >>> percent_scores(rows)
    {'dice': 50.0, 'iou': 25.0, 'n_cases': 1}
    """
    out: dict = {}
    n = 0
    for m in metrics:
        means = case_means(rows, m, include)
        out[m] = percent(_nanmean(means.values()))
        n = len(means)
    out["n_cases"] = n
    return out


def filtered_by_uncertainty(rows: Sequence[Mapping], fractions: Sequence[float],
                            metrics: Sequence[str] = ("dice", "iou"),
                            key: str = "uncertainty", include: Sequence[str] | None = None
                            ) -> list[dict]:
    """Re-score after removing the most uncertain cases, for each fraction ``f``.

    The number removed is ``floor(f * n + 0.5)`` (round half up) of the ``n``
    cases, ranked by :func:`napari_segeval.uncertainty.filter_most_uncertain`
    (highest score first; an unscored case, NaN, counts as the most uncertain).

    Examples
    --------
    >>> rows = [{"case": c, "condition": "clean", "structure": "x", "dice": d, "iou": d,
    ...          "uncertainty": u} for c, d, u in [("a", 0.9, 0.1), ("b", 0.1, 0.9)]]
    >>> [(r["removed"], r["dice"]) for r in filtered_by_uncertainty(rows, [0.0, 0.5])]
    [([], 50.0), (['b'], 90.0)]
    """
    from napari_segeval.uncertainty.scores import filter_most_uncertain

    score: dict[str, float] = {}
    for r in rows:
        score.setdefault(r["case"], _f(r.get(key)))
    out = []
    for f in fractions:
        _, removed = filter_most_uncertain(score, float(f))
        gone = set(removed)
        kept = [r for r in rows if r["case"] not in gone]
        out.append({"fraction_removed": float(f), "removed": removed,
                    **percent_scores(kept, metrics, include)})
    return out


def cross_validation(rows: Sequence[Mapping], metrics: Sequence[str] = ("dice", "iou", "recall",
                                                                        "precision"),
                     fold_key: str = "fold") -> dict:
    """``cv5-2d``: per class and class-averaged mean +- std over folds, in percent.

    Per class: :func:`~napari_segeval.metrics.kfold_summary` (mean of the class
    over a fold's cases, then mean and std (ddof=1) over folds). Averaged: each
    fold's mean over classes of those fold means, then mean and std over folds.

    Examples
    --------
    >>> rows = [{"fold": f, "case": f"{f}{s}", "structure": s, "dice": d}
    ...         for f, s, d in [(0, "a", 0.8), (0, "b", 0.6), (1, "a", 1.0), (1, "b", 0.8)]]
    >>> cv = cross_validation(rows, ("dice",))["dice"]
    >>> cv["per_class"]["a"]["mean"], cv["average"]["folds"], cv["average"]["mean"]
    (90.0, [70.0, 90.0], 80.0)
    """
    out = {}
    classes = sorted({r["structure"] for r in rows})
    for m in metrics:
        per_class, fold_means = {}, {}
        for c in classes:
            ks = kfold_summary([r for r in rows if r["structure"] == c], m, fold_key)
            per_class[c] = {"mean": percent(ks["mean"]), "std": percent(ks["std"]),
                            "folds": [percent(f["mean"]) for f in ks["folds"]]}
            for f in ks["folds"]:
                fold_means.setdefault(f["fold"], []).append(f["mean"])
        folds = [percent(_nanmean(fold_means[f])) for f in sorted(fold_means, key=str)]
        a = np.asarray([v for v in folds if not math.isnan(v)], float)
        out[m] = {"per_class": per_class, "average": {
            "folds": folds, "mean": float(a.mean()) if a.size else math.nan,
            "std": float(a.std(ddof=1)) if a.size > 1 else (0.0 if a.size else math.nan)}}
    return out


__all__ = ["case_means", "cross_validation", "filtered_by_uncertainty", "median_iqr",
           "percent_scores", "robustness"]
