"""Selective evaluation: risk-coverage curve and its area, by definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napari_segeval.uncertainty import risk_coverage


def test_risk_coverage_by_hand():
    u = {"a": 0.9, "b": 0.1, "c": 0.5, "d": float("nan")}
    dice = {"a": 0.2, "b": 1.0, "c": 0.6, "d": 0.9}
    rc = risk_coverage(u, dice)
    assert rc["order"] == ["b", "c", "a", "d"]  # most certain first, NaN last
    assert rc["coverage"] == [0.25, 0.5, 0.75, 1.0]
    np.testing.assert_allclose(rc["risk"], [0.0, 0.2, 0.4, 1 - 2.7 / 4])
    assert rc["aurc"] == pytest.approx(np.mean([0.0, 0.2, 0.4, 1 - 2.7 / 4]))
    # best order: 1.0, 0.9, 0.6, 0.2
    assert rc["optimal_aurc"] == pytest.approx(np.mean([0.0, 0.05, 1 - 2.5 / 3, 1 - 2.7 / 4]))
    assert rc["excess_aurc"] == pytest.approx(rc["aurc"] - rc["optimal_aurc"]) and rc["n"] == 4


def test_cases_missing_dice_are_left_out_and_empty_is_nan():
    rc = risk_coverage({"a": 0.1, "b": 0.2}, {"a": 0.5, "b": float("nan"), "z": 1.0})
    assert rc["n"] == 1 and rc["risk"] == [0.5]
    assert math.isnan(risk_coverage({}, {})["aurc"])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=40))
def test_aurc_is_bounded_by_the_oracle_and_perfect_scores_reach_it(pairs):
    u = {f"c{i}": a for i, (a, _) in enumerate(pairs)}
    dice = {f"c{i}": b for i, (_, b) in enumerate(pairs)}
    rc = risk_coverage(u, dice)
    assert rc["optimal_aurc"] <= rc["aurc"] + 1e-12
    assert 0.0 <= rc["aurc"] <= 1.0
    assert rc["risk"][-1] == pytest.approx(1 - np.mean(list(dice.values())))
    oracle = risk_coverage({c: 1.0 - d for c, d in dice.items()}, dice)
    assert oracle["aurc"] == pytest.approx(rc["optimal_aurc"])
