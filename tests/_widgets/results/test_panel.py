"""The Results panel: from a msd-robust run to the worst case in napari, and bad input."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from qtpy.QtCore import Qt

from napari_segeval._reader import napari_get_reader, open_results_folder, read_layers
from napari_segeval._widgets._state import current_index, go_to_index
from napari_segeval._widgets.results.panel import ResultsPanel
from napari_segeval.io import read_image, read_labels

TASK = Path(__file__).resolve().parents[3] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"
FGSM = "fgsm-linf eps=0.5"


@pytest.fixture
def results_run(fgsm_run):
    """msd-robust, built-in CT model, one FGSM condition, two cropped cases of the sample task."""
    return fgsm_run


def csv_rows(out: Path) -> list[dict]:
    with open(out / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def open_panel(viewer, qtbot, path, settle=None) -> ResultsPanel:
    panel = ResultsPanel(viewer)
    if settle is not None:
        settle(panel)
    viewer.window.add_dock_widget(panel, name="Results")
    panel.open_folder(path)
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=60000)
    return panel


def show_row(panel, qtbot, row: int = 0) -> None:
    panel.select_row(row)
    qtbot.waitUntil(lambda: not panel.runner.running and panel.loaded is not None, timeout=60000)


def worst_slice(ref: np.ndarray, pred: np.ndarray, label: int) -> int:
    """Lowest Dice among slices holding the structure; ties: most FP + FN voxels."""
    scored = []
    for k in range(ref.shape[0]):
        a, b = ref[k] == label, pred[k] == label
        if a.any() or b.any():
            inter = int((a & b).sum())
            scored.append((2 * inter / (a.sum() + b.sum()), -int((a ^ b).sum()), k))
    return min(scored)[2]


@pytest.fixture
def settle(qtbot):
    """Wait for the Dice panel's surface-metrics job of a panel (before the viewer closes)."""
    panels = []
    yield panels.append
    for panel in panels:
        dice = panel.evaluate.dice if panel.evaluate is not None else None
        if dice is not None:
            qtbot.waitUntil(
                lambda d=dice: not d.surface_runner.running and not d.surface_timer.isActive(),
                timeout=60000,
            )


def test_reader_opens_the_panel_and_the_worst_row_shows_the_case(
    results_run, make_napari_viewer, qtbot, settle, monkeypatch
):
    out = results_run
    assert napari_get_reader(str(out)) is open_results_folder
    assert napari_get_reader(str(TASK / "imagesTr")) is None  # a plain folder is not ours
    viewer = make_napari_viewer()
    viewer.open(str(out), plugin="napari-segeval")
    _, panel = viewer.window.add_plugin_dock_widget("napari-segeval", "Results")
    settle(panel)
    qtbot.waitUntil(lambda: panel.folder is not None, timeout=60000)
    assert len(viewer.layers) == 0  # nothing is loaded before a row is chosen
    rows = panel.visible_rows()
    assert rows[0]["dice"] == min(r["dice"] for r in rows)  # worst first
    worst = rows[0]
    assert worst["condition"] == FGSM
    import threading

    from napari_segeval.metrics import LiveMetrics

    main_thread_counts = []
    recount = LiveMetrics._recount_all

    def watched(self):
        main_thread_counts.append(threading.current_thread() is threading.main_thread())
        recount(self)

    monkeypatch.setattr(LiveMetrics, "_recount_all", watched)
    show_row(panel, qtbot, 0)
    # both predictions counted once, in the worker; the Dice panel adopted those counts
    assert main_thread_counts == [False, False]
    cid = worst["case"]
    spec = panel.folder.spec(cid)
    roles = panel.layers.layers
    assert set(roles) == {
        "image",
        "reference",
        "clean",
        f"attacked:{FGSM}",
        "perturbed",
        "perturbation",
    }
    assert len(viewer.layers) == 6
    # every layer placed as the reader places the source image
    _, reader_kwargs, _ = read_layers(spec.images[0])[0]
    source = read_image(spec.images[0])
    for layer in roles.values():
        np.testing.assert_allclose(layer.scale, reader_kwargs["scale"])
        np.testing.assert_allclose(layer.translate, reader_kwargs["translate"])
        assert layer.metadata["geometry"] == source.geometry.to_dict()
    np.testing.assert_array_equal(roles["image"].data, source.image)
    np.testing.assert_array_equal(roles["reference"].data, read_labels(spec.labels)[0])
    files = panel.folder.records[cid]["files"]
    np.testing.assert_array_equal(roles["clean"].data, read_labels(out / files["clean"])[0])
    attacked = roles[f"attacked:{FGSM}"].data
    np.testing.assert_array_equal(attacked, read_labels(out / files[FGSM])[0])
    perturbed = read_image(out / files[f"perturbed:{FGSM}"]).image
    perturbation = read_image(out / files[f"perturbation:{FGSM}"]).image
    np.testing.assert_array_equal(roles["perturbed"].data, perturbed)
    np.testing.assert_array_equal(roles["perturbation"].data, perturbation)
    assert perturbed.dtype == np.float32
    np.testing.assert_allclose(perturbed, source.image + perturbation, atol=1e-3)
    # the Dice panel equals results.csv for the row's structure
    dice = panel.evaluate.dice
    label = worst["label"]
    assert panel.state.current == label
    rec = next(r for r in dice.records if r["label"] == label)
    csv_by_cond = {
        r["condition"]: float(r["dice"])
        for r in csv_rows(out)
        if r["case"] == cid and r["structure"] == worst["structure"]
    }
    assert rec["clean"]["dice"] == pytest.approx(csv_by_cond["clean"], abs=1e-12)
    assert rec["attacked"]["dice"] == pytest.approx(csv_by_cond[FGSM], abs=1e-12)
    # ... and the view is on the structure's worst slice under the attack
    expected = worst_slice(roles["reference"].data, attacked, label)
    assert current_index(viewer, roles["reference"]) == expected
    # another row of the same case: no reload, the view moves to that structure's worst slice
    n = next(
        i
        for i, r in enumerate(panel.visible_rows())
        if r["case"] == cid and r["condition"] == "clean" and r["structure"] == "liver"
    )
    before = roles["image"]
    panel.select_row(n)
    qtbot.waitUntil(lambda: not panel.runner.running and panel.state.current == 1, timeout=60000)
    assert panel.layers.layers["image"] is before and roles["clean"].visible
    assert current_index(viewer, roles["reference"]) == worst_slice(
        roles["reference"].data, roles["clean"].data, 1
    )
    # the Dice panel's *Worst slice* button agrees with the Results panel
    shown = current_index(viewer, roles["reference"])
    go_to_index(viewer, roles["reference"], 0 if shown else 1)
    assert dice.go_to_worst() == shown
    assert current_index(viewer, roles["reference"]) == shown


def test_next_case_replaces_the_layers(results_run, make_napari_viewer, qtbot, settle):
    viewer = make_napari_viewer(show=True)  # shown: shortcuts need an active window
    panel = open_panel(viewer, qtbot, results_run, settle)
    show_row(panel, qtbot, 0)
    first = panel.loaded.case_id
    names = [layer.name for layer in viewer.layers]
    camera = panel.layers._camera()
    camera.zoom = 3.0
    panel.layers.layers["image"].contrast_limits = (-100.0, 200.0)
    panel.step_case(1)
    qtbot.waitUntil(
        lambda: not panel.runner.running and panel.loaded.case_id != first, timeout=60000
    )
    second = panel.loaded.case_id
    assert len(viewer.layers) == len(names) == 6
    assert all(layer.name.startswith(second) for layer in viewer.layers)
    assert panel.state.image is panel.layers.layers["image"]
    assert panel.state.reference is panel.layers.layers["reference"]
    assert camera.zoom == pytest.approx(3.0)  # kept per modality
    assert tuple(panel.layers.layers["image"].contrast_limits) == (-100.0, 200.0)
    # the keyboard: Alt+Left goes back
    panel.window().activateWindow()
    qtbot.waitUntil(panel.window().isActiveWindow)
    qtbot.keyClick(panel.table, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(
        lambda: not panel.runner.running and panel.loaded.case_id == first, timeout=60000
    )
    assert len(viewer.layers) == 6


def test_filters_and_sorting(results_run, make_napari_viewer, qtbot, settle):
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, results_run, settle)
    panel.filters["structure"].value = "liver"
    panel.filters["condition"].value = "clean"
    rows = panel.visible_rows()
    assert len(rows) == 2 and {r["structure"] for r in rows} == {"liver"}
    assert [r["dice"] for r in rows] == sorted(r["dice"] for r in rows)
    panel.table.sortByColumn(panel.model.column("dice"), Qt.SortOrder.DescendingOrder)
    assert [r["dice"] for r in panel.visible_rows()] == sorted(
        (r["dice"] for r in rows), reverse=True
    )
    assert not panel.filters["fold"].enabled  # msd-robust has no folds


def test_save_corrected_prediction_never_overwrites(
    results_run, make_napari_viewer, qtbot, tmp_path, settle
):
    out = tmp_path / "copy"
    shutil.copytree(results_run, out)
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, out, settle)
    show_row(panel, qtbot, 0)
    layer = panel.layers.layers["clean"]
    layer.paint((int(layer.data.shape[0] // 2), 40, 40), 3)  # a brush stroke
    panel.correction.setCurrentText("clean")
    first = panel.save_correction()
    second = panel.save_correction()
    cid = panel.loaded.case_id
    assert first.parent == out / "corrections" / cid and first.name == "clean.nii.gz"
    assert second.name == "clean-2.nii.gz"
    labels, geometry, _ = read_labels(second)
    np.testing.assert_array_equal(labels, layer.data)
    assert geometry.matches(read_image(panel.folder.spec(cid).images[0]).geometry)


def test_bad_folders_are_notifications(
    results_run, make_napari_viewer, qtbot, tmp_path, notifications
):
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, tmp_path)
    assert any("not a results folder" in m for m in notifications())
    newer = tmp_path / "newer"
    shutil.copytree(results_run, newer)
    run = json.loads((newer / "run.json").read_text())
    (newer / "run.json").write_text(json.dumps({**run, "protocol_version": "9.0"}))
    panel.open_folder(newer)
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=60000)
    assert any("newer than" in m and "9.0" in m for m in notifications())
    assert panel.folder is None and len(viewer.layers) == 0


def test_missing_files_are_named_and_nothing_is_half_loaded(
    results_run, make_napari_viewer, qtbot, tmp_path, notifications
):
    out = tmp_path / "copy"
    shutil.copytree(results_run, out)
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, out)
    cid = panel.visible_rows()[0]["case"]
    gone = out / panel.folder.records[cid]["files"][FGSM]
    gone.unlink()
    panel.select_row(0)
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=60000)
    assert any(gone.name in m and "missing" in m for m in notifications())
    assert len(viewer.layers) == 0 and panel.loaded is None
    assert not panel.locate_button.isEnabled()  # a results file, not the data set


def test_moved_data_set_offers_to_locate_it(
    results_run, make_napari_viewer, qtbot, settle, tmp_path, notifications
):
    out = tmp_path / "copy"
    shutil.copytree(results_run, out)
    cases = json.loads((out / "cases.json").read_text())
    data = Path(cases["cases"][0]["root"])  # the run's data folder
    moved = tmp_path / "moved" / data.name
    shutil.copytree(data, moved)
    gone = "/no/longer/here/" + data.name
    for c in cases["cases"]:
        c["images"] = [p.replace(str(data), gone) for p in c["images"]]
        c["labels"] = c["labels"].replace(str(data), gone)
        c["root"] = gone
    (out / "cases.json").write_text(json.dumps(cases))
    viewer = make_napari_viewer()
    panel = open_panel(viewer, qtbot, out, settle)
    panel.select_row(0)
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=60000)
    assert any(gone in m and "Locate data folder" in m for m in notifications())
    assert len(viewer.layers) == 0 and panel.locate_button.isEnabled()
    panel.remap_data(moved)
    qtbot.waitUntil(lambda: not panel.runner.running and panel.loaded is not None, timeout=60000)
    assert len(viewer.layers) == 6
    assert panel.layers.layers["image"].metadata["source"].startswith(str(moved))


def test_demo_shows_the_worst_row(results_run, make_napari_viewer, qtbot, settle):
    from napari_segeval._widgets.demo import show_results

    viewer = make_napari_viewer()
    panel = show_results(viewer, results_run)
    settle(panel)
    qtbot.waitUntil(lambda: panel.loaded is not None and not panel.runner.running, timeout=60000)
    worst = panel.visible_rows()[0]
    key = ("case", "structure", "condition")
    assert [panel.row[k] for k in key] == [worst[k] for k in key]
    assert panel.loaded.case_id == worst["case"]
    roles = panel.layers.layers
    assert roles[f"attacked:{FGSM}"].visible and not roles["clean"].visible
    assert not roles["perturbed"].visible and roles["reference"].contour == 1
    assert panel.evaluate.tabs.currentWidget() is panel.evaluate.dice


def test_set_case_notifies_once():
    from types import SimpleNamespace

    from napari_segeval._widgets._state import ViewerState

    state = ViewerState()
    heard = []
    state.events.all.connect(lambda info: heard.append(info.signal.name))
    ref = SimpleNamespace(metadata={"structures": {1: "liver", 2: "spleen"}})
    state.set_case("image", ref, {"clean": "c", "attacked": "a"}, current=2)
    assert heard == ["reference"]
    assert (state.image, state.reference, state.predictions) == (
        "image",
        ref,
        {"clean": "c", "attacked": "a"},
    )
    assert state.structures == {1: "liver", 2: "spleen"} and state.current == 2
    state.set_case(None, None, {}, None)
    assert state.predictions == {"clean": None, "attacked": None} and state.current is None
