"""Failure-detection measures: by hand, against a second implementation, at the edges."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from napari_segeval._json import json_safe
from napari_segeval.uncertainty import (
    FAILURE_BELOW_SLICE,
    FAILURE_BELOW_STRUCTURE,
    failure_auroc,
    failure_detection,
    recall_at,
    review_length,
    risk_coverage_curve,
)

# --------------------------------------------------------------------------- second implementation


def brute_curve(score, risk):
    """The tie-block curve straight from its definition, in exact fractions.

    For every distinct score t, from the largest down, the items with a score of at
    most t are kept; then the end point at coverage 0.
    """
    s = [math.inf if math.isnan(x) else x for x in score]
    r = [Fraction(x) for x in risk]
    n = len(s)
    cov, sel, gen = [], [], []
    for t in sorted(set(s), reverse=True):
        kept = [r[i] for i in range(n) if s[i] <= t]
        cov.append(Fraction(len(kept), n))
        sel.append(sum(kept, Fraction(0)) / len(kept))
        gen.append(sum(kept, Fraction(0)) / n)
    return cov + [Fraction(0)], sel + [sel[-1]], gen + [Fraction(0)]


def trapezoid(x, y):
    return sum((x[i] - x[i + 1]) * (y[i] + y[i + 1]) / 2 for i in range(len(x) - 1))


def brute_aurc(score, risk):
    cov, sel, _ = brute_curve(score, risk)
    return float(trapezoid(cov, sel))


def brute_augrc(score, risk):
    cov, _, gen = brute_curve(score, risk)
    return float(trapezoid(cov, gen))


def same(a, b) -> bool:
    """Two results equal field by field, NaN equal to NaN."""
    return json.dumps(json_safe(a.to_dict())) == json.dumps(json_safe(b.to_dict()))


def tie_orders(score):
    """Every order of the items, riskiest first, that breaks the ties of ``score``."""
    n = len(score)
    for perm in itertools.permutations(range(n)):
        if all(score[perm[i]] >= score[perm[i + 1]] for i in range(n - 1)):
            yield perm


# dice on a grid of 1/8 so that ties in Dice happen and the fractions are exact
dice_values = st.integers(0, 8).map(lambda k: k / 8)
score_values = st.integers(0, 3).map(float)  # few values: many tied scores
pairs = st.lists(st.tuples(score_values, dice_values), min_size=1, max_size=7)


# --------------------------------------------------------------------------- by hand


def test_four_items_with_a_tie_by_hand():
    # scores 0.9 tie (Dice 0.2 and 0.8); risk = 1 - Dice = 0.8, 0.2, 0.4, 0.0
    fd = failure_detection([0.9, 0.9, 0.5, 0.1], [0.2, 0.8, 0.6, 1.0], failure_below=0.75)
    assert fd.n == 4 and fd.n_failures == 2 and fd.failure_below == 0.75
    # kept 4 (mean 0.35), the tie set aside together: kept 2 (0.4/2), kept 1 (0), end
    assert fd.curve.coverage == (1.0, 0.5, 0.25, 0.0)
    assert fd.curve.selective_risk == pytest.approx((0.35, 0.2, 0.0, 0.0))
    assert fd.curve.generalized_risk == pytest.approx((0.35, 0.1, 0.0, 0.0))
    aurc = 0.5 * (0.35 + 0.2) / 2 + 0.25 * (0.2 + 0.0) / 2
    assert fd.aurc == pytest.approx(aurc) and aurc == pytest.approx(0.1625)
    # the oracle keeps risks 0, 0.2, 0.4, 0.8 in that order: 0.35, 0.2, 0.1, 0, end 0
    optimal = 0.25 * ((0.35 + 0.2) / 2 + (0.2 + 0.1) / 2 + (0.1 + 0.0) / 2)
    assert fd.optimal_aurc == pytest.approx(optimal)
    assert fd.random_aurc == pytest.approx(0.35)
    assert fd.excess_aurc == pytest.approx(aurc - optimal)
    assert fd.normalised_aurc == pytest.approx((0.35 - aurc) / (0.35 - optimal))
    assert fd.augrc == pytest.approx(0.5 * (0.35 + 0.1) / 2 + 0.25 * 0.1 / 2)
    # oracle generalized risk: 0.35, 0.15, 0.05, 0, end 0
    assert fd.optimal_augrc == pytest.approx(0.25 * (0.5 / 2 + 0.2 / 2 + 0.05 / 2))
    # failures (0.9, 0.5) against successes (0.9, 0.1): tie 1/2 + 1 + 0 + 1 over 4
    assert fd.failure_auroc == pytest.approx(2.5 / 4)
    # one place to review, the top tie holds one failure in two items: 1/2 of 2 failures
    assert fd.recall_at_10 == pytest.approx(0.25)
    # average ranks (3.5, 3.5, 2, 1) against (4, 2, 3, 1): 3 / sqrt(4.5 * 5)
    assert fd.spearman == pytest.approx(3 / math.sqrt(22.5))


def test_a_constant_score_is_random_one_block():
    dice = [0.1, 0.5, 0.9, 1.0, 0.3]
    fd = failure_detection([0.4] * 5, dice, failure_below=0.75)
    mean_risk = np.mean([1 - d for d in dice])
    assert fd.curve.coverage == (1.0, 0.0)
    assert fd.aurc == pytest.approx(mean_risk) and fd.random_aurc == pytest.approx(mean_risk)
    assert fd.normalised_aurc == 0.0
    assert fd.augrc == pytest.approx(mean_risk / 2)
    assert fd.failure_auroc == 0.5
    # the review list is one of five tied items: a fifth of every failure
    assert fd.recall_at_10 == pytest.approx(1 / 5)
    assert math.isnan(fd.spearman)


def test_the_review_list_rounds_up_and_splits_a_straddling_tie():
    assert [review_length(n) for n in (0, 1, 5, 10, 11, 20, 21, 30, 100)] == [
        0,
        1,
        1,
        1,
        2,
        2,
        3,
        3,
        10,
    ]
    assert review_length(7, 0.5) == 4
    assert review_length(100, 0.07) == 7  # 0.07 * 100 is 7.000000000000001
    # 20 items: 2 places; the top is a failure, then a tie of 4 holding 2 failures
    s = [5.0] + [4.0] * 4 + [0.0] * 15
    f = [True, True, True, False, False] + [False] * 14 + [True]
    # 1 + 2 failures * (1 place / 4 tied items) = 1.5 of 4 failures
    assert recall_at(s, f) == pytest.approx(1.5 / 4)


def test_default_thresholds():
    assert (FAILURE_BELOW_STRUCTURE, FAILURE_BELOW_SLICE) == (0.75, 0.5)
    fd = failure_detection([0.1, 0.2], [0.75, 0.7499], failure_below=FAILURE_BELOW_STRUCTURE)
    assert fd.n_failures == 1  # strictly below
    fd = failure_detection([0.1, 0.2], [0.5, 0.4], failure_below=FAILURE_BELOW_SLICE)
    assert fd.n_failures == 1


# --------------------------------------------------------------------------- against a second implementation


@settings(max_examples=150, deadline=None)
@given(pairs)
def test_curve_and_areas_match_the_definition(items):
    score = [s for s, _ in items]
    risk = [1 - d for _, d in items]
    cov, sel, gen = brute_curve(score, risk)
    c = risk_coverage_curve(score, risk)
    assert c.coverage == pytest.approx([float(x) for x in cov])
    assert c.selective_risk == pytest.approx([float(x) for x in sel])
    assert c.generalized_risk == pytest.approx([float(x) for x in gen])
    fd = failure_detection(score, [d for _, d in items], failure_below=0.75)
    assert fd.aurc == pytest.approx(brute_aurc(score, risk), abs=1e-12)
    assert fd.augrc == pytest.approx(brute_augrc(score, risk), abs=1e-12)
    assert fd.optimal_aurc == pytest.approx(brute_aurc(risk, risk), abs=1e-12)
    assert fd.optimal_augrc == pytest.approx(brute_augrc(risk, risk), abs=1e-12)
    assert 0.0 <= fd.aurc <= 1.0 and 0.0 <= fd.augrc <= 1.0


@pytest.mark.parametrize("seed", range(8))
def test_failure_auroc_matches_sklearn_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    score = rng.integers(0, 6, n) / 5.0  # six values: ties everywhere
    dice = rng.random(n)
    failed = dice < 0.5
    if failed.all() or not failed.any():
        failed[0] = not failed[0]
    expected = roc_auc_score(failed, score)
    assert failure_auroc(score, failed) == pytest.approx(expected, abs=1e-12)
    fd = failure_detection(score, np.where(failed, 0.2, 0.9), failure_below=0.5)
    assert fd.failure_auroc == pytest.approx(expected, abs=1e-12)


def test_a_nan_score_is_the_riskiest():
    score = np.array([0.1, np.nan, 0.3, 0.2, np.nan])
    failed = np.array([False, True, False, True, False])
    as_max = np.where(np.isnan(score), 1e9, score)
    assert failure_auroc(score, failed) == pytest.approx(roc_auc_score(failed, as_max))
    dice = np.where(failed, 0.1, 0.9)
    a = failure_detection(score, dice, failure_below=0.5)
    b = failure_detection(as_max, dice, failure_below=0.5)
    assert same(a, b)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(score_values, dice_values), min_size=1, max_size=6))
def test_recall_is_its_expectation_over_every_order_of_the_ties(items):
    score = [s for s, _ in items]
    failed = [d < 0.5 for _, d in items]
    n_fail = sum(failed)
    if n_fail == 0:
        assert math.isnan(recall_at(score, failed))
        return
    k = review_length(len(score))
    found = [sum(failed[i] for i in order[:k]) / n_fail for order in tie_orders(score)]
    assert recall_at(score, failed) == pytest.approx(np.mean(found), abs=1e-12)


@pytest.mark.parametrize("risk", [[0.0, 0.5, 0.5, 1.0, 0.25], [0.9, 0.1, 0.3, 0.3, 0.0, 0.6]])
def test_random_aurc_is_the_mean_over_every_order(risk):
    n = len(risk)
    areas = [brute_aurc(list(p), risk) for p in itertools.permutations(range(n))]
    fd = failure_detection(np.zeros(n), [1 - r for r in risk], failure_below=0.75)
    assert fd.random_aurc == pytest.approx(np.mean(areas), abs=1e-12)
    assert fd.random_aurc == pytest.approx(np.mean(risk))


def weak_orders(n):
    """Every score vector on n items up to ties: values 0..n-1."""
    return itertools.product(range(n), repeat=n)


@pytest.mark.parametrize("risk", [[0.3, 1.0, 0.0, 0.6], [0.7, 1.0, 0.0], [0.5, 0.5, 0.0, 0.25]])
def test_the_oracle_is_the_best_augrc_and_plateaus_can_undercut_its_aurc(risk):
    n = len(risk)
    oracle = failure_detection(risk, [1 - r for r in risk], failure_below=0.75)
    augrcs = [brute_augrc(list(s), risk) for s in weak_orders(n)]
    aurcs = [brute_aurc(list(s), risk) for s in weak_orders(n)]
    assert min(augrcs) == pytest.approx(oracle.optimal_augrc, abs=1e-12)
    # the trapezoid rewards tied blocks (a chord under a concave curve): documented
    assert min(aurcs) <= oracle.optimal_aurc + 1e-12
    if risk == [0.7, 1.0, 0.0]:
        tied = failure_detection([1.0, 1.0, 0.0], [0.3, 0.0, 1.0], failure_below=0.75)
        assert tied.aurc < tied.optimal_aurc and tied.normalised_aurc > 1.0


# --------------------------------------------------------------------------- perfect and inverted


@settings(max_examples=80, deadline=None)
@given(pairs)
def test_perfect_and_inverted_scores(items):
    dice = np.array([d for _, d in items])
    perfect = failure_detection(1 - dice, dice, failure_below=0.75)
    monotone = failure_detection(np.exp(-3 * dice), dice, failure_below=0.75)
    assert perfect.excess_aurc == 0.0 and same(monotone, perfect)
    inverted = failure_detection(dice, dice, failure_below=0.75)
    if np.ptp(dice) == 0:
        assert math.isnan(perfect.normalised_aurc) and math.isnan(perfect.spearman)
        return
    assert perfect.normalised_aurc == 1.0
    assert inverted.normalised_aurc < 0.0 and inverted.aurc > inverted.random_aurc
    assert perfect.spearman == pytest.approx(1.0) and inverted.spearman == pytest.approx(-1.0)
    if 0 < perfect.n_failures < perfect.n:
        assert perfect.failure_auroc == 1.0 and inverted.failure_auroc == 0.0
        assert perfect.recall_at_10 == pytest.approx(
            min(review_length(perfect.n), perfect.n_failures) / perfect.n_failures
        )


def test_perfect_score_with_tied_dice_reaches_one():
    dice = [0.0, 0.0, 0.0, 0.6, 1.0, 1.0]
    fd = failure_detection([1 - d for d in dice], dice, failure_below=0.5)
    assert fd.normalised_aurc == 1.0 and fd.excess_aurc == 0.0
    assert fd.failure_auroc == 1.0 and fd.recall_at_10 == pytest.approx(1 / 3)


# --------------------------------------------------------------------------- edges and bad input


def test_empty():
    fd = failure_detection([], [], failure_below=0.75)
    assert fd.n == 0 and fd.n_failures == 0 and fd.curve.coverage == ()
    for name in ("aurc", "optimal_aurc", "random_aurc", "excess_aurc", "normalised_aurc"):
        assert math.isnan(getattr(fd, name)), name
    for name in ("augrc", "optimal_augrc", "failure_auroc", "spearman", "recall_at_10"):
        assert math.isnan(getattr(fd, name)), name


def test_only_nan_dice_is_empty_and_nan_rows_are_dropped():
    assert failure_detection([0.2, 0.4], [np.nan, np.nan], failure_below=0.5).n == 0
    a = failure_detection([0.9, 0.5, 0.1, 0.7], [0.2, np.nan, 0.9, 0.4], failure_below=0.5)
    b = failure_detection([0.9, 0.1, 0.7], [0.2, 0.9, 0.4], failure_below=0.5)
    assert same(a, b) and a.n == 3


def test_all_failures_and_all_successes():
    fail = failure_detection([0.9, 0.2, 0.5], [0.1, 0.3, 0.2], failure_below=0.75)
    assert fail.n_failures == 3 and math.isnan(fail.failure_auroc)
    assert fail.recall_at_10 == pytest.approx(1 / 3)  # one place, three failures
    assert fail.normalised_aurc == pytest.approx(1.0)  # the score orders them right
    ok = failure_detection([0.9, 0.2, 0.5], [0.9, 0.95, 0.8], failure_below=0.75)
    assert ok.n_failures == 0 and math.isnan(ok.failure_auroc) and math.isnan(ok.recall_at_10)
    assert not math.isnan(ok.aurc)


def test_one_item_and_equal_dice():
    one = failure_detection([0.3], [0.4], failure_below=0.5)
    assert one.aurc == pytest.approx(0.6) and one.optimal_aurc == pytest.approx(0.6)
    assert math.isnan(one.normalised_aurc) and math.isnan(one.spearman)
    assert one.recall_at_10 == 1.0
    same = failure_detection([0.1, 0.9], [0.5, 0.5], failure_below=0.75)
    assert same.excess_aurc == 0.0 and math.isnan(same.normalised_aurc)


def test_to_dict_is_json():
    fd = failure_detection([0.2, 0.2], [0.9, 0.95], failure_below=0.75)
    d = fd.to_dict()
    assert list(d)[:3] == ["n", "n_failures", "failure_below"]
    assert {"coverage", "selective_risk", "generalized_risk"} <= set(d) and "curve" not in d
    back = json.loads(json.dumps(json_safe(d), allow_nan=False))
    assert back["failure_auroc"] is None and back["coverage"] == [1.0, 0.0]
    with pytest.raises(AttributeError):
        fd.aurc = 0.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("score", "dice", "below", "match"),
    [
        ([0.1, 0.2], [0.5], 0.5, "differ in shape"),
        ([[0.1, 0.2]], [[0.5, 0.5]], 0.5, "one-dimensional"),
        ([0.1, 0.2], [0.5, 1.2], 0.5, r"dice must be in \[0, 1\]"),
        ([0.1, 0.2], [0.5, -0.1], 0.5, r"dice must be in \[0, 1\]"),
        ([0.1, 0.2], [0.5, 0.6], 0.0, r"failure_below must be in \(0, 1\]"),
        ([0.1, 0.2], [0.5, 0.6], 1.5, r"failure_below must be in \(0, 1\]"),
        ([0.1, 0.2], [0.5, 0.6], math.nan, r"failure_below must be in \(0, 1\]"),
    ],
)
def test_bad_input_is_refused(score, dice, below, match):
    with pytest.raises(ValueError, match=match):
        failure_detection(score, dice, failure_below=below)


def test_bad_input_of_the_parts():
    with pytest.raises(ValueError, match="NaN"):
        risk_coverage_curve([0.1, 0.2], [0.5, np.nan])
    with pytest.raises(ValueError, match="fraction"):
        recall_at([0.1], [True], fraction=0.0)
    with pytest.raises(ValueError, match="differ in shape"):
        failure_auroc([0.1, 0.2], [True])
