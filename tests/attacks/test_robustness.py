import math

import pytest

from napari_segeval.attacks.robustness import robustness_summary, task_threshold


def _records():
    clean = {"a": {1: 0.9, 2: 0.7}, "b": {1: 0.6, 2: 0.4}}
    attacked = {
        "fgsm": {"a": {1: 0.8, 2: 0.3}, "b": {1: 0.2, 2: 0.1}},
        "pgd": {"a": {1: 0.1, 2: 0.1}, "b": {1: 0.5, 2: 0.4}},
    }
    return [
        {
            "case": c,
            "condition": cond,
            "label": lab,
            "clean": clean[c][lab],
            "attacked": attacked[cond][c][lab],
        }
        for cond in attacked
        for c in clean
        for lab in clean[c]
    ]


def test_threshold_is_half_the_task_mean_clean_dice_once():
    recs = _records()
    # per-case means 0.8 and 0.5 -> task mean 0.65 -> threshold 0.325
    assert task_threshold(recs) == pytest.approx(0.325)
    one = [r for r in recs if r["condition"] == "fgsm"]
    assert task_threshold(one) == pytest.approx(task_threshold(recs))


def test_threshold_is_not_compounded_across_attacks():
    s = robustness_summary(_records())
    assert s["threshold"] == pytest.approx(0.325)
    robust = {(c["case"], c["condition"]): c["robust"] for c in s["cases"]}
    # a/fgsm 0.55, b/fgsm 0.15, a/pgd 0.1, b/pgd 0.45 against 0.325 for every attack
    assert robust == {
        ("a", "fgsm"): True,
        ("b", "fgsm"): False,
        ("a", "pgd"): False,
        ("b", "pgd"): True,
    }
    assert s["robust_fraction"] == {"fgsm": 0.5, "pgd": 0.5}
    drop = next(c for c in s["cases"] if c["case"] == "a" and c["condition"] == "fgsm")["drop"]
    assert drop == pytest.approx({1: 0.1, 2: 0.4})


def test_given_threshold_and_nan_attacked():
    recs = [{"case": "a", "condition": "x", "label": 1, "clean": 0.9, "attacked": float("nan")}]
    s = robustness_summary(recs, threshold=0.1)
    assert s["threshold"] == 0.1 and s["cases"][0]["robust"] is False
    assert math.isnan(s["cases"][0]["mean_attacked"])


def test_equal_to_threshold_is_not_robust_and_matches_metrics_rule():
    from napari_segeval.metrics import is_robust, robust_threshold

    recs = [
        {"case": c, "condition": "pgd", "label": 1, "clean": clean, "attacked": att}
        for c, clean, att in [("a", 1.0, 0.375), ("b", 0.5, 0.5), ("c", float("nan"), 0.9)]
    ]
    s = robustness_summary(recs)
    assert s["threshold"] == robust_threshold([1.0, 0.5]) == 0.375
    robust = {c["case"]: c["robust"] for c in s["cases"]}
    assert robust == {"a": False, "b": True, "c": True}
    assert all(robust[c["case"]] == is_robust(c["mean_attacked"], 0.375) for c in s["cases"])
    assert s["robust_fraction"] == {"pgd": pytest.approx(2 / 3)}
