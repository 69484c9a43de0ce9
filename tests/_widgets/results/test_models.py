"""The Results panel and compare mode on a run of several models: model A against model B."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from napari_segeval._widgets.overlays.arrays import disagreement
from napari_segeval._widgets.results.panel import ResultsPanel
from napari_segeval.evaluation import run_evaluation
from napari_segeval.evaluation.layouts import load_layout
from napari_segeval.io import read_labels

TASK = Path(__file__).resolve().parents[3] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"
A, B = "clean @ builtin", "clean @ threshold"


def csv_rows(out: Path) -> list[dict]:
    with open(out / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def open_panel(viewer, qtbot, path) -> ResultsPanel:
    panel = ResultsPanel(viewer)
    viewer.window.add_dock_widget(panel, name="Results")
    panel.open_folder(path)
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=60000)
    return panel


def show_row(panel, qtbot, row: int = 0) -> None:
    panel.select_row(row)
    qtbot.waitUntil(lambda: not panel.runner.running and panel.loaded is not None, timeout=60000)


@pytest.fixture(scope="module")
def two_model_run(tmp_path_factory) -> Path:
    """medsam2-3d with builtin and threshold on the sample task's first case (read it only)."""
    out = tmp_path_factory.mktemp("two-models") / "run"
    run_evaluation(
        load_layout(TASK)[:1],
        "medsam2-3d",
        out,
        params={"models": ["builtin", "threshold"]},
        workers=1,
    )
    return out


@pytest.mark.slow
def test_two_models_side_by_side(two_model_run, make_napari_viewer, qtbot):
    from napari_segeval._widgets.compare.view import CompareBar

    out = two_model_run
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, out)
    rows = panel.visible_rows()
    assert {str(r["key"]) for r in rows} == {A, B}
    assert {r["model"] for r in rows} == {"builtin", "threshold"}
    n = next(i for i, r in enumerate(rows) if str(r["key"]) == A and r["structure"] == "liver")
    show_row(panel, qtbot, n)
    layers = panel.layers.layers
    assert set(layers) == {"image", "reference", f"attacked:{A}", f"attacked:{B}"}
    files = panel.folder.records["abd_001"]["files"]
    for key in (A, B):
        np.testing.assert_array_equal(
            layers[f"attacked:{key}"].data, read_labels(out / files[key])[0]
        )
    assert panel.loaded.pair == (A, B)
    state = panel.state
    assert state.predictions["clean"] is layers[f"attacked:{A}"]
    assert state.predictions["attacked"] is layers[f"attacked:{B}"]
    assert state.attacked_image is None  # no attack: model B's pane shows the image
    # the Dice panel scores both models as results.csv does
    qtbot.waitUntil(
        lambda: panel.evaluate is not None and bool(panel.evaluate.dice.records), timeout=60000
    )
    rec = next(r for r in panel.evaluate.dice.records if r["label"] == 1)
    csv_dice = {r["model"]: float(r["dice"]) for r in csv_rows(out) if r["structure"] == "liver"}
    assert rec["clean"]["dice"] == pytest.approx(csv_dice["builtin"], abs=1e-12)
    assert rec["attacked"]["dice"] == pytest.approx(csv_dice["threshold"], abs=1e-12)
    # compare mode: model A against model B, titled with their names; the disagreement layer
    bar = CompareBar(viewer, state)
    qtbot.addWidget(bar)
    bar.compare.setChecked(True)
    titles = {k: t.text() for k, t in bar.view.titles.items()}
    assert titles["clean"] == f"image + {A}" and titles["attacked"] == f"image + {B}"
    assert bar.view.sources["clean"][-1] is layers[f"attacked:{A}"]
    assert bar.view.sources["attacked"][-1] is layers[f"attacked:{B}"]
    bar.disagreement.setChecked(True)
    expected = disagreement(
        np.asarray(layers[f"attacked:{A}"].data), np.asarray(layers[f"attacked:{B}"].data)
    )
    assert expected.any()
    np.testing.assert_array_equal(bar.overlay.layer.data, expected)
    # a row of model B: the same two predictions, B's layer shown, the view on its structure
    m = next(i for i, r in enumerate(panel.visible_rows()) if str(r["key"]) == B)
    panel.select_row(m)
    qtbot.waitUntil(lambda: not panel.runner.running and str(panel.row["key"]) == B, timeout=60000)
    assert panel.loaded.pair == (A, B) and layers[f"attacked:{B}"].visible
    assert not layers[f"attacked:{A}"].visible
    bar.close()
    dice = panel.evaluate.dice  # its surface-metrics job ends before the viewer closes
    qtbot.waitUntil(
        lambda: not dice.surface_runner.running and not dice.surface_timer.isActive(),
        timeout=60000,
    )
