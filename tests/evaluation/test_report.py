"""report.html: self-contained, sortable, thumbnails, tables-only without matplotlib."""

from __future__ import annotations

import re

from _segeval_toy import TOY

from napari_segeval.evaluation import _figures, report, run_evaluation

PARAMS = {"model": TOY, "attacks": [{"name": "_segeval_toy:shift_attack", "shift": 2}]}


def test_report_sections_and_inline_pictures(msd_task, tmp_path):
    out = tmp_path / "out"
    run_evaluation(msd_task, "msd-robust", out, params=PARAMS, workers=1)
    page = (out / "report.html").read_text()
    assert "segeval msd-robust 1.4" in page and "&quot;shift&quot;: 2" in page
    assert "drop _segeval_toy:shift_attack shift=2" in page and 'class="sortable"' in page
    assert "Robust fraction" in page and "Worst cases" in page
    assert "<script>" in page and "http://" not in page and "https://" not in page
    pictures = re.findall(r'src="data:image/png;base64,', page)
    # box plot + 4 worst cases x (image, reference, clean, attacked)
    assert len(pictures) == 1 + 4 * 4


def test_tables_only_without_matplotlib(msd_task, tmp_path, monkeypatch):
    out = tmp_path / "out"
    run_evaluation(msd_task, "msd-robust", out, params={"model": TOY}, workers=1, report=False)
    monkeypatch.setattr(_figures, "have_matplotlib", lambda: False)
    page = (report.write_report(out, worst=1)).read_text()
    assert "Box plots need matplotlib" in page and "tables only" in page
    assert len(re.findall(r"data:image/png", page)) == 3  # thumbnails need only Pillow


def test_overlay_colours_foreground_only():
    import numpy as np

    img = np.full((3, 3), 100, np.uint8)
    lab = np.zeros((3, 3), np.uint8)
    lab[1, 1] = 2
    rgb = _figures.overlay(img, lab, min_size=3)
    assert rgb[0, 0].tolist() == [100, 100, 100] and rgb[1, 1].tolist() != [100, 100, 100]


def test_dice_against_uncertainty_section_states_the_correlation():
    rows = [
        {"case": f"c{i}", "condition": "clean", "structure": s, "dice": d, "uncertainty": 1.0 - d}
        for i, d in enumerate([0.9, 0.5, 0.7, 0.2])
        for s in ("background", "organ")
    ]
    for r in rows:
        if r["structure"] == "background":
            r["dice"] = 0.99  # background is left out of the per-case Dice
    html = report.dice_vs_uncertainty(rows)
    assert "n = 4" in html and "Pearson r = -1.000" in html and "-1.000" in html
    assert "foreground structures" in html and 'src="data:image/png;base64,' in html
    assert (
        report.dice_vs_uncertainty(
            [{k: v for k, v in r.items() if k != "uncertainty"} for r in rows]
        )
        == ""
    )


def test_uncertainty_report_has_the_scatter(msd_task, tmp_path):
    out = tmp_path / "out"
    run_evaluation(msd_task, "uncertainty", out, params={"model": TOY}, workers=1)
    page = (out / "report.html").read_text()
    assert "Dice against uncertainty" in page and "Spearman" in page
    assert "Failure detection" in page and "normalised AURC" in page


def test_a_selective_summary_before_failure_detection_still_renders():
    from napari_segeval.evaluation._report_sections import uncertainty_tables

    old = {  # uncertainty 2.1: the risk-coverage keys before failure detection
        "analysis": "selective",
        "all_cases": {"dice": 90.0},
        "retained": {"0.10": {"dice": 95.0}},
        "risk_coverage": {
            "coverage": [0.5, 1.0],
            "risk": [0.0, 0.1],
            "aurc": 0.05,
            "n": 2,
            "optimal_aurc": 0.05,
            "excess_aurc": 0.0,
        },
    }
    page = uncertainty_tables(old)
    assert "AURC = 0.0500" in page and "10% most uncertain set aside" in page
    assert "Failure detection" not in page
    new = {
        **old,
        "risk_coverage": {
            **old["risk_coverage"],
            "normalised_aurc": None,
            "failure_below": 0.75,
            "n_failures": 0,
            "recall_at_10": 0.5,
        },
    }
    page = uncertainty_tables(new)
    assert "below 0.75 (0 of 2 cases)" in page and "Recall@10 %" in page


def test_worst_cases_leave_absences_out_unless_counted():
    rows = [  # b: one structure segmented perfectly, the other absent from both (Dice 0)
        {"case": "a", "condition": "clean", "structure": "x", "dice": 0.6, "absent": False},
        {"case": "a", "condition": "clean", "structure": "y", "dice": 0.7, "absent": False},
        {"case": "b", "condition": "clean", "structure": "x", "dice": 1.0, "absent": False},
        {"case": "b", "condition": "clean", "structure": "y", "dice": 0.0, "absent": True},
    ]
    assert [c for c, _, _ in report._worst(rows, 2)] == ["a", "b"]
    assert [c for c, _, _ in report._worst(rows, 2, absences=True)] == ["b", "a"]
