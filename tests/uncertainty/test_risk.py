"""Risk signals and the combined risk (uncertainty.risk) on geometry with a known answer."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from napari_segeval.models.walk import StopReason
from napari_segeval.propagation.trace import StructureTrace, WalkEnd
from napari_segeval.uncertainty.risk import (
    Flag,
    Logistic,
    RiskKind,
    RiskModel,
    Signal,
    SliceRisk,
    fit_logistic,
    flags_of,
    slice_signals,
    structure_features,
    structure_risk,
)


def _column(n=6, size=10) -> np.ndarray:
    m = np.zeros((n, size, size), bool)
    m[1:5, 2:8, 2:8] = True  # 36 voxels on slices 1-4
    return m


def test_continuity_is_one_minus_the_dice_with_the_neighbours():
    m = _column()
    m[3, 2:8, 2:5] = False  # half of slice 3: Dice with a full neighbour 18*2/54 = 2/3
    s = slice_signals(m, m * 0.9, [1, 2, 3, 4])
    assert s[1][Signal.CONTINUITY] == pytest.approx(0.0)
    assert s[2][Signal.CONTINUITY] == pytest.approx(1 / 6)
    assert s[3][Signal.CONTINUITY] == pytest.approx(1 / 3)
    assert math.isnan(slice_signals(m, m * 0.9, [0])[0][Signal.CONTINUITY])  # no mask there


def test_entropy_is_zero_for_a_certain_mask_and_one_for_a_coin():
    m = _column()
    assert slice_signals(m, m.astype(float), [2])[2][Signal.ENTROPY] == pytest.approx(0.0)
    half = np.where(m, 0.5, 0.0)
    e = slice_signals(m, half, [2])[2][Signal.ENTROPY]
    assert e == pytest.approx(36 / 60)  # 36 coin voxels of the 60 of the mask grown by a cross


def test_end_is_the_last_area_over_the_largest_on_last_and_after():
    m = _column()
    m[4, 2:8, 2:5] = False  # the last slice holds half the largest area
    end = WalkEnd("forward", 4, 5, StopReason.EMPTY)
    s = slice_signals(m, m * 0.9, [3, 4, 5], ends=[end])
    assert [s[k][Signal.END] for k in (3, 4, 5)] == pytest.approx([0.0, 0.5, 0.5])


def test_model_signals_read_the_trace_and_the_other_models():
    m = _column()
    other = np.zeros_like(m)
    s = slice_signals(m, m * 0.9, [2], quality={2: 0.8}, agreement={2: 0.75}, others=[m, other])
    assert s[2][Signal.IOU] == pytest.approx(0.2)
    assert s[2][Signal.JITTER] == pytest.approx(0.25)
    assert s[2][Signal.MODELS] == pytest.approx(0.5)  # Dice 1 with one, 0 with the other


def test_tta_is_one_minus_the_mean_dice_with_the_augmented_passes():
    m = _column()
    shifted = np.roll(m, 3, axis=2)  # 3 of 6 columns still overlap: Dice 0.5
    s = slice_signals(m, m * 0.9, [2], augmented=[m, shifted])
    assert s[2][Signal.TTA] == pytest.approx(0.25)
    assert math.isnan(slice_signals(m, m * 0.9, [2])[2][Signal.TTA])
    assert Flag.TTA in flags_of(s[2] | {Signal.TTA: 0.4})


def test_the_dense_risk_model_reads_the_dense_signals_only():
    dense = RiskModel.load(kind=RiskKind.DENSE)
    assert set(dense.slice.names) == {"entropy", "continuity", "tta"}
    assert dense.provenance["models"] == ["builtin-ct"] and "command" in dense.provenance
    m = _column()
    bad = slice_signals(m, m * 0.9, [2], augmented=[np.zeros_like(m)])[2]
    good = slice_signals(m, m * 0.9, [2], augmented=[m])[2]
    as_names = lambda sig: {k.value: v for k, v in sig.items()}  # noqa: E731
    assert dense.slice(as_names(bad)) > dense.slice(as_names(good))


def test_flags_name_the_quality_stop_and_each_signal_over_its_level():
    assert flags_of({Signal.END: 0.9}, stopped=True) == (Flag.STOPPED,)
    assert flags_of({Signal.END: 0.9}) == (Flag.ENDED,)
    assert flags_of({Signal.IOU: 0.31, Signal.JITTER: 0.1, Signal.MODELS: math.nan}) == (Flag.IOU,)
    assert flags_of({}) == ()


def test_structure_risk_describes_predicted_after_and_reference_slices():
    m = _column()
    trace = StructureTrace(ends=(WalkEnd("forward", 4, 5, StopReason.IOU),))
    r = structure_risk(7, m, m * 0.95, trace=trace, extra_slices=[0, 99])
    assert [s.slice for s in r.slices] == [0, 1, 2, 3, 4, 5]
    assert r.stops == ((4, "the IoU estimate fell"),)
    assert {s.slice for s in r.flagged} >= {4, 5}
    assert all(Flag.STOPPED in s.flags for s in r.slices if s.slice in (4, 5))
    assert 0.0 <= r.risk <= 1.0 and r.riskiest_slice in (4, 5)


def test_structure_features_weight_slices_by_area():
    s = [SliceRisk(0, 0.0, {}, area=9), SliceRisk(1, 1.0, {}, area=1)]
    f = structure_features(s, True)
    assert f["mean_risk"] == pytest.approx(0.1) and f["max_risk"] == 1.0
    assert f["quality_stop"] == 1.0 and f["n_slices"] == pytest.approx(math.log(2))
    assert structure_features([], False)["mean_risk"] == 1.0


def test_fit_logistic_recovers_a_known_model():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=4000), rng.normal(size=4000)
    p = 1 / (1 + np.exp(-(0.5 + 2.0 * a - 1.0 * b)))
    y = rng.uniform(size=4000) < p
    x = [{"a": float(u), "b": float(v)} for u, v in zip(a, b)]
    x[0]["b"] = math.nan  # a missing value takes the mean
    m = fit_logistic(["a", "b"], x, y, l2=0.0)
    assert m.weights == pytest.approx((2.0, -1.0), abs=0.2)
    assert m.intercept == pytest.approx(0.5, abs=0.15)
    assert m.fill[1] == pytest.approx(float(np.mean(b[1:])))


def test_the_shipped_model_loads_and_round_trips(tmp_path):
    model = RiskModel.load()
    assert set(model.slice.names) <= {s.value for s in Signal}
    assert "command" in model.provenance and "fitted_on" in model.provenance
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model.to_dict()))
    again = RiskModel.load(path)
    assert again.slice == model.slice and again.structure == model.structure


def test_a_signal_the_run_cannot_give_takes_the_fitted_mean():
    m = Logistic(("a",), (3.0,), -1.0, (0.5,))
    assert m({"a": math.nan}) == pytest.approx(m({"a": 0.5})) == pytest.approx(m({}))
