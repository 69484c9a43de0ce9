"""Protocol aggregations of a run's ok result rows into plain JSON-able dicts."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from napari_segeval._names import CLEAN
from napari_segeval.metrics import (
    as_float,
    kfold_summary,
    mean_std,
    overlap_from_counts,
    percent,
    robust_fraction,
    robust_threshold,
    summarize,
)
from napari_segeval.metrics.catalog import mean


def is_absent(row: Mapping) -> bool:
    """Whether a result row is an *absence*: its structure is in neither the reference nor the
    prediction (its ``absent`` column, else, in older results, zero volumes).
    """
    v = row.get("absent")
    if v is not None and v != "":
        return v is True or str(v).strip().lower() in ("true", "1")
    return as_float(row.get("volume_ref_ml")) == 0 and as_float(row.get("volume_pred_ml")) == 0


def case_means(
    rows: Iterable[Mapping], metric: str = "dice", include: Sequence[str] | None = None
) -> dict[tuple, float]:
    """``(case, condition) -> mean of metric over structures`` (NaN skipped)."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        if include is not None and r.get("structure") not in include:
            continue
        if metric in r:
            groups.setdefault((r["case"], r["condition"]), []).append(as_float(r[metric]))
    return {k: mean(v) for k, v in groups.items()}


def dice_and_uncertainty(rows: Sequence[Mapping]) -> tuple[list[float], list[float], list[str]]:
    """Per case, in case order: its ``uncertainty`` score and its mean clean Dice over the
    foreground structures (all structures when there are none), and those structures.
    """
    score = {r["case"]: as_float(r.get("uncertainty")) for r in rows if "uncertainty" in r}
    fg = sorted({r["structure"] for r in rows} - {"background"})
    dice = case_means([r for r in rows if r["condition"] == CLEAN], "dice", fg or None)
    cases = sorted(c for c, _ in dice if c in score)
    return [score[c] for c in cases], [dice[(c, CLEAN)] for c in cases], fg


def robustness(rows: Sequence[Mapping], *, factor: float = 0.5) -> dict:
    """``msd-robust`` numbers: per-structure means, task means, Dice drop, robust fraction.

    A case is robust under an attack when its attacked Dice (mean over structures) is
    strictly above ``factor`` x the task's mean clean Dice
    (:func:`napari_segeval.metrics.robust_threshold`; NaN counts as not robust).
    """
    clean, metric = CLEAN, "dice"
    per_structure = summarize(rows, metric, by=("structure", "condition"))
    means = case_means(rows, metric)
    conditions = sorted({c for _, c in means}, key=lambda c: (c != clean, c))
    each = {c: [v for (_, cc), v in means.items() if cc == c] for c in conditions}
    task_mean = {c: mean(v) for c, v in each.items()}
    base = {s["structure"]: s["mean"] for s in per_structure if s["condition"] == clean}
    drop: dict[str, dict] = {}
    for s in per_structure:
        if s["condition"] != clean and s["structure"] in base:
            drop.setdefault(s["structure"], {})[s["condition"]] = base[s["structure"]] - s["mean"]
    threshold = robust_threshold(each.get(clean, []), factor)
    robust = {c: robust_fraction(v, threshold) for c, v in each.items() if c != clean}
    task_drop = {c: task_mean.get(clean, math.nan) - v for c, v in task_mean.items() if c != clean}
    return {
        "metric": metric,
        "per_structure": per_structure,
        "task_mean": task_mean,
        "task_dice_drop": task_drop,
        "dice_drop": drop,
        "robust_threshold": threshold,
        "robust_factor": factor,
        "robust_fraction": robust,
    }


def median_iqr(rows: Sequence[Mapping]) -> dict:
    """MedSAM2 aggregation of DSC and NSD: median and IQR per structure, per task, pooled over
    tasks (``over_tasks``) and over the per-task medians (``over_task_medians``).
    """
    out = {}
    for m in ("dice", "nsd"):
        per_task = summarize(rows, m, by=("task",))
        medians = [{m: t["median"]} for t in per_task]
        out[m] = {
            "per_structure": summarize(rows, m, by=("task", "structure")),
            "per_task": per_task,
            "over_tasks": (summarize(rows, m, by=()) or [{}])[0],
            "over_task_medians": (summarize(medians, m, by=()) or [{}])[0],
        }
    return out


def by_model(rows: Sequence[Mapping], metrics: Sequence[str] = ("dice", "nsd")) -> dict:
    """Several models compared: median and IQR per structure, model and condition
    (MedSAM2's figure 2); metrics no row carries are left out.
    """
    models = list(dict.fromkeys(str(r.get("model")) for r in rows))
    out: dict = {"models": models}
    out["aggregation"] = "median with IQR (quartiles by linear interpolation)"
    order = {name: i for i, name in enumerate(models)}

    def key(t: dict) -> tuple:
        c = t["condition"]
        return str(t["structure"]), c != CLEAN, str(c), order.get(str(t["model"]), 0)

    for m in metrics:
        if any(not math.isnan(as_float(r.get(m))) for r in rows):
            out[m] = sorted(summarize(rows, m, by=("structure", "model", "condition")), key=key)
    return out


def percent_scores(rows: Sequence[Mapping], metrics: Sequence[str] = ("dice", "iou")) -> dict:
    """Mean over cases of the per-case class average, in percent, for each metric."""
    means = {m: case_means(rows, m) for m in metrics}
    n = len(means[metrics[-1]]) if metrics else 0
    return {**{m: percent(mean(v.values())) for m, v in means.items()}, "n_cases": n}


def filtered_by_uncertainty(
    rows: Sequence[Mapping], fractions: Sequence[float], rule: str = "round"
) -> list[dict]:
    """Re-score after removing the most uncertain cases for each fraction ``f``: the
    ``floor(f * n + 0.5)`` most uncertain of the ``n`` cases, or (``rule="quantile"``) those
    above the ``(1 - f)`` quantile (:func:`napari_segeval.uncertainty.filter_most_uncertain`),
    by the rows' ``uncertainty``; Dice and IoU in percent (:func:`percent_scores`).
    """
    from napari_segeval.uncertainty.scores import filter_most_uncertain

    score: dict[str, float] = {}
    for r in rows:
        score.setdefault(r["case"], as_float(r.get("uncertainty")))
    out = []
    for f in fractions:
        removed = filter_most_uncertain(score, float(f), rule)[1]
        gone = set(removed)
        kept = [r for r in rows if r["case"] not in gone]
        out.append({"fraction_removed": float(f), "removed": removed, **percent_scores(kept)})
    return out


def cross_validation(rows: Sequence[Mapping]) -> dict:
    """``cv5-2d``: per class and class-averaged mean +- std over folds, in percent.

    Per class: :func:`~napari_segeval.metrics.kfold_summary`. Averaged: each fold's mean
    over classes of those fold means, then mean and std over folds.
    """
    out = {}
    classes = sorted({r["structure"] for r in rows})
    for m in _METRICS:
        per_class: dict[str, dict] = {}
        fold_means: dict[object, list[float]] = {}
        for c in classes:
            ks = kfold_summary([r for r in rows if r["structure"] == c], m)
            per_class[c] = {
                "mean": percent(ks["mean"]),
                "std": percent(ks["std"]),
                "folds": [percent(f["mean"]) for f in ks["folds"]],
            }
            for f in ks["folds"]:
                fold_means.setdefault(f["fold"], []).append(f["mean"])
        folds = [percent(mean(fold_means[f])) for f in sorted(fold_means, key=str)]
        out[m] = {"per_class": per_class, "average": {"folds": folds, **mean_std(folds)}}
    return out


COUNT_KEYS = ("n_tp", "n_ref", "n_pred")
_METRICS = ("dice", "iou", "recall", "precision")


def _class_counts(rows: Iterable[Mapping]) -> tuple[list[str], np.ndarray]:
    """The sorted classes of the rows with pixel counts, and their summed counts ``(k, 3)``."""
    sums: dict[str, np.ndarray] = {}
    for r in rows:
        if all(k in r for k in COUNT_KEYS):
            sums.setdefault(r["structure"], np.zeros(3, np.int64))
            sums[r["structure"]] += [int(r[k]) for k in COUNT_KEYS]
    classes = sorted(sums)
    return classes, np.array([sums[c] for c in classes], np.int64).reshape(-1, 3)


def _per_class(classes: list[str], per: Mapping, metrics: Sequence[str]) -> dict:
    """Each class's metrics of ``per`` (arrays over ``classes``), in percent."""
    return {c: {m: percent(float(per[m][i])) for m in metrics} for i, c in enumerate(classes)}


def pooled_scores(
    rows: Iterable[Mapping], metrics: Sequence[str] = _METRICS, empty: str = "one"
) -> dict:
    """Metrics in percent from the rows' summed pixel counts (``n_tp``, ``n_ref``, ``n_pred``)
    per class (``empty`` for a class absent everywhere), their mean over classes
    (``average``), and of the counts of every class but ``background`` pooled (``micro``).
    """
    classes, counts = _class_counts(rows)
    if not classes:
        return {}
    fg = counts[[c != "background" for c in classes]]
    per = overlap_from_counts(*counts.T, empty=empty)
    micro = overlap_from_counts(*fg.sum(axis=0), empty=empty)
    return {
        "per_class": _per_class(classes, per, metrics),
        "average": {m: percent(float(np.mean(per[m]))) for m in metrics},
        "micro": {m: percent(float(micro[m])) for m in metrics},
    }


def accumulated_scores(rows: Iterable[Mapping], metrics: Sequence[str] = _METRICS) -> dict:
    """mmsegmentation's ``IoUMetric`` reading of ``rows``' pixel counts, in percent: per class
    (a ratio is NaN where its own denominator is zero over the whole set), and ``average``,
    the NaN-skipping mean over classes, background included (mDice, mIoU ...).
    """
    classes, counts = _class_counts(rows)
    if not classes:
        return {}
    tp, ref, pred = counts.T
    per = overlap_from_counts(tp, ref, pred, empty="nan")
    per["precision"] = np.where(pred > 0, per["precision"], math.nan)
    per["recall"] = np.where(ref > 0, per["recall"], math.nan)
    return {
        "per_class": _per_class(classes, per, metrics),
        "average": {m: percent(mean(per[m])) for m in metrics},
    }


def over_folds(
    rows: Sequence[Mapping],
    score: Callable[[list], dict],
    blocks: Sequence[str] = ("average",),
    metrics: Sequence[str] = _METRICS,
) -> dict:
    """``score(rows of one fold)`` per fold (:func:`pooled_scores`, :func:`accumulated_scores`),
    then mean +- std (ddof=1) over folds of each class (a class absent from a fold left out)
    and of ``blocks``; ``{}`` when the rows carry no counts.
    """
    folds = sorted({r["fold"] for r in rows if r.get("fold") is not None}, key=str)
    per_fold = [score([r for r in rows if r.get("fold") == f]) for f in folds]
    per_fold = [p for p in per_fold if p]
    if not per_fold:
        return {}
    classes = sorted({c for p in per_fold for c in p["per_class"]})

    def block(values: list[float]) -> dict:
        return {"folds": values, **mean_std(values)}

    return {
        m: {
            "per_class": {
                c: block([p["per_class"].get(c, {}).get(m, math.nan) for p in per_fold])
                for c in classes
            },
            **{b: block([p[b][m] for p in per_fold]) for b in blocks},
        }
        for m in metrics
    }


def holdout_scores(
    rows: Sequence[Mapping], metrics: Sequence[str] = _METRICS, empty: str = "one"
) -> dict:
    """Scores of a held-out split (one model, no folds), in percent: per class and of the
    case's class mean (mean and std over cases), and :func:`pooled_scores`.
    """
    classes = sorted({r["structure"] for r in rows})
    out: dict = {"n_cases": len({r["case"] for r in rows})}
    for m in metrics:
        per_class = {
            c: mean_std(percent(as_float(r.get(m))) for r in rows if r["structure"] == c)
            for c in classes
        }
        average = mean_std(percent(v) for v in case_means(rows, m).values())
        out[m] = {"per_class": per_class, "average": average}
    return {**out, "pooled": pooled_scores(rows, metrics, empty)}


__all__ = [
    "accumulated_scores",
    "by_model",
    "case_means",
    "cross_validation",
    "dice_and_uncertainty",
    "filtered_by_uncertainty",
    "holdout_scores",
    "is_absent",
    "median_iqr",
    "over_folds",
    "percent_scores",
    "pooled_scores",
    "robustness",
]
