import math

import numpy as np
import pytest

from napari_segeval._errors import ReadError, WriteError
from napari_segeval.metrics.aggregate import (
    ResultsTable,
    fraction,
    is_robust,
    kfold_summary,
    percent,
    robust_fraction,
    robust_threshold,
    summarize,
)


def test_csv_roundtrip_and_no_overwrite(tmp_path):
    t = ResultsTable()
    t.add("c1", "liver", "clean", dice=0.9, hd95=1.5, eps=0.0)
    t.add("c2", "liver", "pgd", dice=float("nan"), eps=0.03)
    path = t.to_csv(tmp_path / "r.csv")
    back = ResultsTable.from_csv(path)
    assert back.rows[0] == {
        "case": "c1",
        "structure": "liver",
        "condition": "clean",
        "dice": 0.9,
        "hd95": 1.5,
        "eps": 0.0,
    }
    assert math.isnan(back.rows[1]["dice"]) and "hd95" not in back.rows[1]
    with pytest.raises(WriteError):
        t.to_csv(path)
    t.to_csv(path, overwrite=True)
    assert [p.name for p in tmp_path.iterdir()] == ["r.csv"]  # no temp file left


def test_from_csv_errors(tmp_path):
    with pytest.raises(ReadError):
        ResultsTable.from_csv(tmp_path / "missing.csv")
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ReadError):
        ResultsTable.from_csv(tmp_path / "bad.csv")


def test_summarize_groups_nan_and_quartiles():
    rows = [
        {"structure": "lv", "condition": "clean", "dice": v} for v in (0.1, 0.2, 0.3, 0.4, np.nan)
    ]
    rows += [{"structure": "la", "condition": "clean", "dice": 0.5}]
    out = {s["structure"]: s for s in summarize(rows)}
    lv = out["lv"]
    assert (lv["n"], lv["n_nan"]) == (4, 1)
    assert lv["mean"] == pytest.approx(0.25) and lv["median"] == pytest.approx(0.25)
    assert lv["q1"] == pytest.approx(0.175) and lv["q3"] == pytest.approx(0.325)
    assert lv["std"] == pytest.approx(np.std([0.1, 0.2, 0.3, 0.4], ddof=1))
    assert out["la"]["std"] == 0.0 and out["la"]["iqr"] == 0.0
    task = summarize(rows, by=("condition",))
    assert task[0]["n"] == 5


def test_kfold():
    rows = [{"fold": f, "dice": d} for f in range(5) for d in (0.8 + f / 100, 0.9 + f / 100)]
    s = kfold_summary(rows)
    assert [f["mean"] for f in s["folds"]] == pytest.approx([0.85, 0.86, 0.87, 0.88, 0.89])
    assert s["mean"] == pytest.approx(0.87)
    assert s["std"] == pytest.approx(np.std([0.85, 0.86, 0.87, 0.88, 0.89], ddof=1))


def test_percent_and_fraction():
    assert percent(0.91) == pytest.approx(91.0)
    np.testing.assert_allclose(percent(np.array([0.5, np.nan])), [50.0, np.nan])
    assert fraction([True, False]) == 0.5 and math.isnan(fraction([]))


def test_robust_threshold_once_from_finite_clean_dice():
    assert robust_threshold([1.0, 0.5]) == 0.375
    assert robust_threshold([1.0, 0.5], factor=0.8) == pytest.approx(0.6)
    # NaN (no structure measured), inf (not a Dice) and None are left out of the mean
    assert robust_threshold([1.0, math.nan, 0.5, math.inf, None, -math.inf]) == 0.375
    assert math.isnan(robust_threshold([])) and math.isnan(robust_threshold([math.nan]))


def test_is_robust_strictly_greater_and_non_finite_never_robust():
    assert is_robust(0.376, 0.375) and not is_robust(0.375, 0.375) and not is_robust(0.2, 0.375)
    for bad in (math.nan, math.inf, -math.inf, None):
        assert not is_robust(bad, 0.375)
    assert not is_robust(0.9, math.nan)  # no threshold (no clean Dice): nothing is robust
    assert not is_robust(0.9, -math.inf)


def test_robust_fraction_counts_every_case():
    assert robust_fraction([0.9, 0.375, math.nan, 0.1], 0.375) == 0.25
    assert math.isnan(robust_fraction([], 0.375))
