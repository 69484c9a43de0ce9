"""The Results panel's table: absences read "absent", sort after real scores and can be hidden."""

from __future__ import annotations

import math

from qtpy.QtCore import Qt

from napari_segeval._widgets.results.table import ABSENT, ResultsModel, ResultsProxy

ROWS = [  # polyp_020: its non-neoplastic polyp segmented well, the neoplastic class absent
    {
        "case": "polyp_020",
        "structure": "neoplastic",
        "condition": "clean",
        "dice": 0.0,
        "absent": True,
    },
    {
        "case": "polyp_020",
        "structure": "non_neoplastic",
        "condition": "clean",
        "dice": 0.979,
        "absent": False,
    },
    {
        "case": "polyp_007",
        "structure": "neoplastic",
        "condition": "clean",
        "dice": 0.41,
        "absent": False,
    },
    {
        "case": "polyp_007",
        "structure": "non_neoplastic",
        "condition": "clean",
        "dice": 1.0,
        "absent": True,
    },
    {
        "case": "polyp_011",
        "structure": "neoplastic",
        "condition": "clean",
        "dice": math.nan,
        "absent": False,
    },
]


def table(qtbot):
    model = ResultsModel(ROWS)
    proxy = ResultsProxy()
    proxy.setSourceModel(model)
    return model, proxy


def order(proxy, model, direction=Qt.SortOrder.AscendingOrder):
    proxy.sort(model.column("dice"), direction)
    return [(proxy.row(i)["case"], proxy.row(i)["structure"]) for i in range(proxy.rowCount())]


def test_worst_first_opens_on_real_scores_not_on_absences(qtbot):
    model, proxy = table(qtbot)
    shown = order(proxy, model)
    assert shown[:2] == [("polyp_007", "neoplastic"), ("polyp_020", "non_neoplastic")]
    assert {shown[i] for i in (2, 3, 4)} == {
        ("polyp_020", "neoplastic"),
        ("polyp_007", "non_neoplastic"),
        ("polyp_011", "neoplastic"),
    }
    best_first = order(proxy, model, Qt.SortOrder.DescendingOrder)
    assert best_first[:2] == [("polyp_020", "non_neoplastic"), ("polyp_007", "neoplastic")]


def test_absent_rows_say_so_and_can_be_hidden(qtbot):
    model, proxy = table(qtbot)
    col = model.column("dice")
    texts = {
        (model.rows[i]["case"], model.rows[i]["structure"]): model.data(model.index(i, col))
        for i in range(len(ROWS))
    }
    assert texts[("polyp_020", "neoplastic")] == ABSENT
    assert texts[("polyp_020", "non_neoplastic")] == "0.979"
    tip = model.data(model.index(0, col), Qt.ItemDataRole.ToolTipRole)
    assert "neither the reference nor the prediction" in tip and "0.000" in tip
    proxy.set_show_absent(False)
    assert proxy.rowCount() == 3
    assert not any(proxy.row(i)["absent"] for i in range(proxy.rowCount()))
    proxy.set_show_absent(True)
    assert proxy.rowCount() == 5


def test_a_run_without_reference_has_risk_and_no_dice_column_and_sorts_riskiest_first(qtbot):
    rows = [
        {"case": c, "structure": "liver", "condition": "clean", "dice": math.nan, "risk": r}
        for c, r in (("a", 0.2), ("b", 0.7), ("c", math.nan), ("d", 0.4))
    ]
    model = ResultsModel(rows)
    proxy = ResultsProxy()
    proxy.setSourceModel(model)
    assert [c[0] for c in model.columns] == ["case", "structure", "condition", "risk"]
    proxy.sort(model.column("risk"), Qt.SortOrder.DescendingOrder)
    assert [proxy.row(i)["case"] for i in range(4)] == ["b", "d", "a", "c"]  # no risk: last
    # with a reference both columns show
    model.set_rows([{**rows[0], "dice": 0.8}, *rows[1:]])
    assert {"dice", "risk"} <= {c[0] for c in model.columns}


def test_reviewed_cases_are_marked(qtbot):
    rows = [{**r, "reviewed": False} for r in ROWS]
    model = ResultsModel(rows)
    col = model.column("reviewed")
    assert col >= 0
    changed = []
    model.dataChanged.connect(lambda *a: changed.append(a))
    model.set_reviewed({"polyp_020"})
    marks = {(r["case"], model.data(model.index(i, col))) for i, r in enumerate(model.rows)}
    assert marks == {("polyp_020", "✓"), ("polyp_007", ""), ("polyp_011", "")}
    assert changed  # the view repaints
    assert "reviewed" not in [c[0] for c in ResultsModel(ROWS).columns]  # no review: no column
