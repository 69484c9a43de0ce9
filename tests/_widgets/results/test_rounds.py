"""The Results panel on an interactive run: step through the correction rounds of a case."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _small_sample import one_case_task

from napari_segeval._widgets._state import current_index
from napari_segeval._widgets.results.panel import ResultsPanel
from napari_segeval._widgets.results.rounds import ADDED, EARLIER, round_rows
from napari_segeval.evaluation import run_evaluation
from napari_segeval.evaluation.store import load_records, result_rows
from napari_segeval.io import read_labels


def two_island_task(root: Path) -> Path:
    """One organ with two detached islands (slice 6: 64 pixels, slice 3: 25): the
    threshold model's propagation from the middle box misses both, the first correction
    clicks the larger island, the second the other."""
    labels = np.zeros((12, 32, 32), np.uint8)
    labels[2:10, 4:14, 4:14] = 1
    labels[6, 20:28, 20:28] = 1
    labels[3, 22:27, 4:9] = 1
    return one_case_task(root, labels)


@pytest.fixture(scope="module")
def rounds_run(tmp_path_factory) -> Path:
    """interactive, threshold model, 1 case, 2 correction rounds (read it only)."""
    root = tmp_path_factory.mktemp("rounds")
    out = root / "run"
    r = run_evaluation(
        two_island_task(root / "Task96"),
        "interactive",
        out,
        workers=1,
        params={"model": "threshold", "keep_largest": False, "rounds": 2},
    )
    assert r.n_ok == 1
    return out


def open_panel(viewer, qtbot, path) -> ResultsPanel:
    panel = ResultsPanel(viewer)
    viewer.window.add_dock_widget(panel, name="Results")
    panel.open_folder(path)
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=60000)
    return panel


def show_row(panel, qtbot, row: int) -> None:
    panel.select_row(row)
    qtbot.waitUntil(lambda: not panel.runner.running and panel.loaded is not None, timeout=60000)


def visible_prediction(panel) -> str:
    (role,) = [
        r for r, ly in panel.layers.layers.items() if panel.layers.is_prediction(r) and ly.visible
    ]
    return role


@pytest.mark.slow
def test_step_through_the_rounds_of_a_case(rounds_run, make_napari_viewer, qtbot):
    out = rounds_run
    written = sorted(result_rows(load_records(out)[1]), key=lambda r: r["round"])
    record = load_records(out)[1][0]
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, out)
    rows = panel.visible_rows()
    assert [r["round"] for r in rows] == [0, 1, 2]  # worst Dice first: round 0
    assert [r["condition"] for r in rows] == ["clean"] * 3  # the condition, as written
    assert [str(r["key"]) for r in rows] == ["clean", "round1:clean", "round2:clean"]
    assert panel.model.column("round") >= 0
    assert not panel.rounds.isVisibleTo(panel)
    show_row(panel, qtbot, 0)
    stepper = panel.rounds
    assert stepper.isVisibleTo(panel) and stepper.current == 0
    assert stepper.table.rowCount() == 3
    assert [stepper.table.item(i, 1).text() for i in range(3)] == [
        f"{r['dice']:.3f}" for r in written
    ]
    assert visible_prediction(panel) == "clean"
    boxes, points = stepper.prompt_layers["boxes"], stepper.prompt_layers["points"]
    assert boxes.nshapes == 1 and len(points.data) == 0  # round 0: the middle-slice box
    box = json.loads(written[0]["prompt"])[0]
    assert np.asarray(boxes.data[0])[:, 0].tolist() == [box["index"]] * 4
    dice = panel.evaluate.dice

    stepper.step(1)  # round 1: its prediction, its click (larger), the view on its slice
    click = json.loads(written[1]["prompt"])[0]
    assert stepper.current == 1 and visible_prediction(panel) == "attacked:round1:clean"
    shown = panel.layers.layers["attacked:round1:clean"]
    saved = read_labels(out / record["files"]["round1:clean"])[0]
    assert np.array_equal(np.asarray(shown.data), saved)
    points = stepper.prompt_layers["points"]
    assert points.data.tolist() == [[click["index"], click["y"], click["x"]]]
    assert points.size.tolist() == pytest.approx([ADDED[0] * 32])
    assert current_index(viewer, dice._layer_for_axis0()) == click["index"]
    assert f"Dice {written[1]['dice']:.3f}" in stepper.status.text()
    assert "+ point" in stepper.status.text()

    stepper.step(1)  # round 2: both clicks, the new one larger; no next round
    second = json.loads(written[2]["prompt"])[0]
    points = stepper.prompt_layers["points"]
    assert points.data.tolist() == [
        [click["index"], click["y"], click["x"]],
        [second["index"], second["y"], second["x"]],
    ]
    assert points.size.tolist() == pytest.approx([EARLIER[0] * 32, ADDED[0] * 32])
    assert click["positive"] and second["positive"]  # found what the threshold missed
    assert np.allclose(points.face_color[:, :3], [0x22 / 255, 0xDD / 255, 0x44 / 255], atol=0.01)
    assert not stepper.next_button.isEnabled()
    assert current_index(viewer, dice._layer_for_axis0()) == second["index"]
    # the Dice tab compares round 0 with round 2 (counted in the panel's worker)
    qtbot.waitUntil(
        lambda: not panel.runner.running and panel.loaded.pair == ("clean", "round2:clean"),
        timeout=60000,
    )
    layers = panel.layers.layers
    assert panel.state.predictions["clean"] is layers["clean"]
    assert panel.state.predictions["attacked"] is layers["attacked:round2:clean"]
    rec = next(r for r in dice.records if r["label"] == 1)
    assert rec["clean"]["dice"] == pytest.approx(written[0]["dice"], abs=1e-12)
    assert rec["attacked"]["dice"] == pytest.approx(written[2]["dice"], abs=1e-12)
    stepper.step(1)
    assert stepper.current == 2

    stepper.step(-1)  # quick steps: the Dice tab ends on the last one (round 2 here)
    stepper.step(1)
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=60000)
    assert panel.state.predictions["attacked"] is layers["attacked:round2:clean"]
    stepper.step(-1)
    qtbot.waitUntil(
        lambda: not panel.runner.running and panel.loaded.pair == ("clean", "round1:clean"),
        timeout=60000,
    )
    assert panel.state.predictions["attacked"] is layers["attacked:round1:clean"]

    stepper.table.selectRow(0)  # a click on a round in the list shows it
    assert stepper.current == 0 and visible_prediction(panel) == "clean"
    assert len(stepper.prompt_layers["points"].data) == 0

    show_row(panel, qtbot, 2)  # a row of round 2 opens the stepper there
    assert stepper.current == 2 and visible_prediction(panel) == "attacked:round2:clean"
    layers = list(stepper.prompt_layers.values())
    panel.open_folder(out)  # another folder (here the same): the prompt layers go
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=60000)
    assert not any(ly in viewer.layers for ly in layers)
    assert not panel.rounds.isVisibleTo(panel)


def test_round_rows_mark_a_fall():
    from types import SimpleNamespace as R

    rounds = [
        R(round=0, dice=0.8, change="box"),
        R(round=1, dice=0.9, change="+ point"),
        R(round=2, dice=0.85, change="- point"),
        R(round=3, dice=float("nan"), change="none"),
    ]
    rows = round_rows(rounds)
    assert [r[2] for r in rows] == ["", "+0.100", "▼ -0.050", ""]
    assert [r[4] for r in rows] == [False, False, True, False]
    assert rows[3][1] == "-"
