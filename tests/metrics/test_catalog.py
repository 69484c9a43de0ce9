"""The metric table: every metric column has one entry, one NaN/inf rule, one display."""

from __future__ import annotations

import math

import numpy as np
import pytest

from napari_segeval.attacks.robustness import robustness_summary
from napari_segeval.evaluation import rows
from napari_segeval.evaluation.results import METRICS as BROWSED
from napari_segeval.evaluation.summary import case_means
from napari_segeval.metrics import ROW_KEYS, summarize
from napari_segeval.metrics.catalog import (
    METRICS,
    STRUCTURE_METRICS,
    as_float,
    mean,
    percentiles,
    scored,
)

IDS = {"label", "name"}


def test_every_metric_column_of_the_rows_has_an_entry():
    structure = [m.name for m in STRUCTURE_METRICS]
    # a structure row's keys, and every float column that every protocol writes
    assert [k for k in ROW_KEYS if k not in IDS] == structure
    assert [c.name for c in rows.SCORE.columns if c.kind is float] == structure
    # the scores some families add, and the columns the results browser shows
    for family, key in (("attacked", "risk"), ("prompted", "risk"), ("uncertain", "uncertainty")):
        assert rows.FAMILIES[family].column(key).doc == METRICS[key].doc
    assert set(BROWSED) <= set(METRICS)
    for m in STRUCTURE_METRICS:  # the column's documentation is the metric's
        assert rows.SCORE.column(m.name).doc == m.doc


def test_names_keys_and_headers_are_unique():
    assert all(k == m.name for k, m in METRICS.items())
    headers = [m.header for m in METRICS.values()]
    text_headers = [m.text_header for m in METRICS.values()]
    assert len(set(headers)) == len(headers) and len(set(text_headers)) == len(text_headers)


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, math.nan),
        ("", math.nan),
        ("x", math.nan),
        ("0.25", 0.25),
        (3, 3.0),
        ("inf", math.inf),
        ("-inf", -math.inf),
        (np.float32(0.5), 0.5),
    ],
)
def test_as_float(value, want):
    got = as_float(value)
    assert (math.isnan(got) and math.isnan(want)) or got == want


def test_nan_is_left_out_and_counted_inf_kept():
    assert scored([1.0, None, math.nan, math.inf, "2"]).tolist() == [1.0, math.inf, 2.0]
    assert mean([0.5, math.nan, 1.0]) == 0.75
    assert mean([1.0, math.inf]) == math.inf and mean([1.0, -math.inf]) == -math.inf
    assert math.isnan(mean([])) and math.isnan(mean([None, "nan"]))
    s = summarize(
        [{"structure": "a", "condition": "c", "hd95": v} for v in (1.0, 2.0, "inf", None)],
        "hd95",
    )[0]
    assert (s["n"], s["n_nan"], s["mean"], s["median"], s["max"]) == (3, 1, math.inf, 2.0, math.inf)


def test_percentiles_are_numpys_on_numbers_and_the_infinite_value_beside_one():
    v = np.random.default_rng(0).random(17)
    assert percentiles(v, [25, 50, 75]).tolist() == np.percentile(v, [25, 50, 75]).tolist()
    assert percentiles([2.0, 1.0, math.inf, None], [0, 50, 75]).tolist() == [1.0, 2.0, math.inf]
    assert percentiles([-math.inf, 1.0, 2.0], [25, 75]).tolist() == [-math.inf, 1.5]
    assert math.isnan(percentiles([-math.inf, math.inf], [50])[0])
    assert np.isnan(percentiles([], [50])).all()


def test_summary_and_robustness_means_agree_on_inf():
    # the two means that once disagreed (summary kept inf, robustness dropped it)
    values = [0.5, math.inf, math.nan]
    ev = case_means(
        [
            {"case": "a", "condition": "c", "structure": str(i), "x": v}
            for i, v in enumerate(values)
        ],
        "x",
    )[("a", "c")]
    recs = [
        {"case": "a", "condition": "pgd", "label": i, "clean": v, "attacked": v}
        for i, v in enumerate(values)
    ]
    att = robustness_summary(recs)["cases"][0]
    assert ev == att["mean_clean"] == att["mean_attacked"] == mean(values) == math.inf


@pytest.mark.parametrize(
    ("name", "value", "want"),
    [
        ("dice", 0.91234, "0.912"),
        ("dice", math.nan, "-"),
        ("dice", None, "-"),
        ("hd95", 3.14159, "3.1"),
        ("hd95", math.inf, "inf"),
        ("hd95", -math.inf, "-inf"),
        ("hd95", "inf", "inf"),
        ("volume_pred_ml", 12.345, "12.3"),
        ("nsd", 1, "1.000"),
        ("delta_dice", 0.25, "+0.250"),
        ("delta_dice", -0.25, "-0.250"),
        ("risk", 0.5, "0.500"),
    ],
)
def test_text(name, value, want):
    assert METRICS[name].text(value) == want


def test_headers_and_direction():
    assert METRICS["hd95"].header == "HD95 mm" and METRICS["dice"].header == "Dice"
    assert METRICS["hd95"].text_header == "hd95_mm"
    assert METRICS["volume_ref_ml"].text_header == "ref_ml"
    assert METRICS["dice"].worse(0.2, 0.3) and METRICS["hd95"].worse(3.0, 2.0)
    assert not METRICS["volume_pred_ml"].worse(1.0, 2.0)
    assert METRICS["risk"].higher_is_better is False
