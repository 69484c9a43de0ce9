"""Protocol aggregations on hand-made results equal the metrics layer and hand arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from napari_segeval.evaluation.summary import (
    case_means,
    cross_validation,
    filtered_by_uncertainty,
    median_iqr,
    robustness,
)
from napari_segeval.metrics import fraction, kfold_summary, summarize

DICE = {  # case -> condition -> structure -> dice
    "a": {"clean": {"liver": 0.9, "spleen": 0.8}, "pgd eps=0.03": {"liver": 0.5, "spleen": 0.2}},
    "b": {"clean": {"liver": 0.7, "spleen": 0.6}, "pgd eps=0.03": {"liver": 0.6, "spleen": 0.5}},
    "c": {
        "clean": {"liver": 0.95, "spleen": float("nan")},
        "pgd eps=0.03": {"liver": 0.1, "spleen": 0.0},
    },
}


def rows_from(table: dict) -> list[dict]:
    return [
        {"case": c, "condition": k, "structure": s, "dice": d}
        for c, by in table.items()
        for k, st in by.items()
        for s, d in st.items()
    ]


def test_robustness_matches_metrics_and_hand_numbers():
    rows = rows_from(DICE)
    r = robustness(rows, factor=0.5)
    assert r["per_structure"] == summarize(rows, "dice", by=("structure", "condition"))
    clean_case = {"a": 0.85, "b": 0.65, "c": 0.95}  # NaN spleen of c skipped
    task_clean = np.mean(list(clean_case.values()))
    assert r["task_mean"]["clean"] == pytest.approx(task_clean)
    attacked = {"a": 0.35, "b": 0.55, "c": 0.05}
    assert r["task_mean"]["pgd eps=0.03"] == pytest.approx(np.mean(list(attacked.values())))
    assert r["robust_threshold"] == pytest.approx(0.5 * task_clean)
    expected = fraction(v > 0.5 * task_clean for v in attacked.values())
    assert r["robust_fraction"]["pgd eps=0.03"] == pytest.approx(expected) == pytest.approx(1 / 3)
    assert r["dice_drop"]["liver"]["pgd eps=0.03"] == pytest.approx(
        np.mean([0.9, 0.7, 0.95]) - np.mean([0.5, 0.6, 0.1])
    )
    assert r["dice_drop"]["spleen"]["pgd eps=0.03"] == pytest.approx(
        np.mean([0.8, 0.6]) - np.mean([0.2, 0.5, 0.0])
    )


def test_robust_rule_is_strict_and_nan_counts_as_not_robust():
    # clean case Dice 1.0 and 0.5: threshold 0.5 x 0.75 = 0.375, exact in binary
    rows = [
        {"case": c, "structure": "liver", "condition": k, "dice": d}
        for c, k, d in [
            ("a", "clean", 1.0),
            ("b", "clean", 0.5),
            ("c", "clean", math.nan),
            ("a", "pgd", 0.375),
            ("b", "pgd", 0.5),
            ("c", "pgd", math.nan),
            ("a", "fgsm", 0.4),
            ("b", "fgsm", 0.375),
        ]
    ]
    r = robustness(rows, factor=0.5)
    assert r["robust_threshold"] == 0.375  # the NaN clean case is left out of the mean
    # equal to the threshold is not robust; a NaN attacked case counts, as not robust
    assert r["robust_fraction"]["pgd"] == pytest.approx(1 / 3)
    assert r["robust_fraction"]["fgsm"] == 0.5


def test_case_means_skip_nan_and_filter_structures():
    m = case_means(rows_from(DICE), include=["liver"])
    assert m[("c", "clean")] == 0.95 and len(m) == 6


def test_median_iqr_equals_summarize():
    rows = [
        {"task": t, "structure": s, "condition": "clean", "dice": d, "nsd": 1 - d}
        for t, s, d in [
            ("T1", "liver", 0.9),
            ("T1", "liver", 0.7),
            ("T1", "spleen", 0.5),
            ("T2", "kidney", 0.2),
            ("T2", "kidney", 0.4),
        ]
    ]
    s = median_iqr(rows)
    assert s["dice"]["per_task"] == summarize(rows, "dice", by=("task",))
    assert s["dice"]["per_structure"] == summarize(rows, "dice", by=("task", "structure"))
    pooled = s["dice"]["over_tasks"]
    assert pooled["median"] == 0.5 and pooled["q1"] == 0.4 and pooled["q3"] == 0.7
    assert s["dice"]["over_task_medians"]["median"] == pytest.approx(np.median([0.7, 0.3]))
    assert s["nsd"]["over_tasks"]["median"] == pytest.approx(0.5)


def test_cross_validation_matches_kfold_summary():
    rng = np.random.default_rng(0)
    rows = [
        {
            "fold": f,
            "case": f"{f}-{i}",
            "structure": s,
            "dice": float(rng.uniform()),
            "iou": 0.5,
            "recall": 1.0,
            "precision": 0.25,
        }
        for f in range(5)
        for i in range(3)
        for s in ("neo", "non")
    ]
    cv = cross_validation(rows)
    for s in ("neo", "non"):
        ks = kfold_summary([r for r in rows if r["structure"] == s], "dice")
        assert cv["dice"]["per_class"][s]["mean"] == pytest.approx(100 * ks["mean"])
        assert cv["dice"]["per_class"][s]["std"] == pytest.approx(100 * ks["std"])
    per_fold = [
        np.mean(
            [
                np.mean([r["dice"] for r in rows if r["fold"] == f and r["structure"] == s])
                for s in ("neo", "non")
            ]
        )
        for f in range(5)
    ]
    assert cv["dice"]["average"]["folds"] == pytest.approx([100 * v for v in per_fold])
    assert cv["dice"]["average"]["mean"] == pytest.approx(100 * np.mean(per_fold))
    assert cv["dice"]["average"]["std"] == pytest.approx(100 * np.std(per_fold, ddof=1))
    assert cv["precision"]["average"]["mean"] == pytest.approx(25.0)
    assert cv["recall"]["average"]["std"] == 0.0


def test_uncertainty_filtering_removes_rounded_fraction():
    rows = []
    for i in range(20):
        d = 0.5 if i < 2 else 0.9
        rows += [
            {
                "case": f"c{i:02d}",
                "condition": "clean",
                "structure": s,
                "dice": d,
                "iou": d / 2,
                "uncertainty": 1.0 - i / 100,
            }
            for s in ("background", "organ")
        ]
    out = filtered_by_uncertainty(rows, [0.0, 0.05, 0.10])
    assert [len(o["removed"]) for o in out] == [0, 1, 2]
    assert out[2]["removed"] == ["c00", "c01"]  # the two most uncertain
    assert out[0]["dice"] == pytest.approx(100 * (2 * 0.5 + 18 * 0.9) / 20)
    assert out[1]["dice"] == pytest.approx(100 * (0.5 + 18 * 0.9) / 19)
    assert out[2]["dice"] == pytest.approx(90.0) and out[2]["iou"] == pytest.approx(45.0)
    assert out[2]["n_cases"] == 18
    assert math.isclose(out[0]["fraction_removed"], 0.0)


def test_robustness_agrees_with_attacks_module():
    from napari_segeval.attacks import robustness_summary

    rows = rows_from(DICE)
    records = [
        {"case": c, "condition": k, "label": s, "clean": by["clean"][s], "attacked": d}
        for c, by in DICE.items()
        for k, st in by.items()
        if k != "clean"
        for s, d in st.items()
    ]
    theirs = robustness_summary(records, factor=0.5)
    ours = robustness(rows, factor=0.5)
    assert ours["robust_threshold"] == pytest.approx(theirs["threshold"])
    assert ours["robust_fraction"] == pytest.approx(theirs["robust_fraction"])
