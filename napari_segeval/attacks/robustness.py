"""Robustness summary: Dice drop per structure and Daza et al.'s (2021) "robust case" rule
(defined once in :func:`napari_segeval.metrics.robust_threshold` and ``is_robust``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from napari_segeval.metrics.aggregate import is_robust, robust_fraction, robust_threshold
from napari_segeval.metrics.catalog import as_float, mean


def task_threshold(records: Iterable[Mapping], factor: float = 0.5) -> float:
    """``factor`` x mean over cases of the per-case mean clean Dice (:func:`robust_threshold`).

    Each (case, structure) clean Dice counts once, however many attacks list it.
    """
    clean: dict[str, dict] = {}
    for r in records:
        clean.setdefault(str(r["case"]), {})[r["label"]] = r["clean"]
    return robust_threshold((mean(d.values()) for d in clean.values()), factor)


def robustness_summary(
    records: Iterable[Mapping], factor: float = 0.5, threshold: float | None = None
) -> dict:
    """Per (case, condition): Dice drop per structure and robust flag; robust fraction.

    Parameters
    ----------
    records : iterable of dict
        ``{case, condition, label, clean, attacked}`` rows (e.g. from
        :meth:`~napari_segeval.attacks.run.AttackResult.dice_records`), all from one task.
    factor : float
        Fraction of the mean clean Dice an attacked case must keep.
    threshold : float, optional
        A threshold computed earlier for this task (default: from ``records``).

    Returns
    -------
    dict
        ``threshold``, ``factor``, ``cases`` (rows with ``mean_clean``, ``mean_attacked``, ``drop``
        per label, ``robust``) and ``robust_fraction`` per condition.
    """
    records = list(records)
    thr = task_threshold(records, factor) if threshold is None else float(threshold)
    groups: dict[tuple[str, str], list] = {}
    for r in records:
        groups.setdefault((str(r["case"]), str(r["condition"])), []).append(r)
    cases: list[dict] = []
    per_cond: dict[str, list] = {}
    for (case, cond), rows in groups.items():
        mean_clean = mean(r["clean"] for r in rows)
        mean_att = mean(r["attacked"] for r in rows)
        robust = is_robust(mean_att, thr)
        drop = {r["label"]: as_float(r["clean"]) - as_float(r["attacked"]) for r in rows}
        cases.append(
            {
                "case": case,
                "condition": cond,
                "mean_clean": mean_clean,
                "mean_attacked": mean_att,
                "drop": drop,
                "robust": robust,
            }
        )
        per_cond.setdefault(cond, []).append(mean_att)
    fraction = {c: robust_fraction(v, thr) for c, v in per_cond.items()}
    return {"threshold": thr, "factor": float(factor), "cases": cases, "robust_fraction": fraction}
