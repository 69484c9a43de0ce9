"""Browsing a results folder: validation, rows, loading a case, moved data, corrections."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from _segeval_toy import TOY, write_msd

from napari_segeval.evaluation import run_evaluation, store
from napari_segeval.evaluation.protocols import get_protocol
from napari_segeval.evaluation.results import (
    MissingFilesError,
    NewerResultsError,
    ResultsFolder,
    ResultsFolderError,
)
from napari_segeval.io import read_image, read_labels

COND = "_segeval_toy:shift_attack shift=2"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    task = write_msd(root / "Task92_Toy", 3, spacing=(2.0, 0.5, 0.75))
    out = root / "out"
    run_evaluation(
        task,
        "msd-robust",
        out,
        params={"model": TOY, "attacks": [{"name": "_segeval_toy:shift_attack", "shift": 2}]},
        workers=1,
        report=False,
    )
    return out, task


def test_rows_have_dice_and_the_drop_under_attack(run_dir):
    out, _ = run_dir
    folder = ResultsFolder(out)
    assert (
        folder.protocol == f"msd-robust {get_protocol('msd-robust').version}"
        and folder.cases() == ["case_000", "case_001", "case_002"]
    )
    rows = folder.rows()
    assert len(rows) == 3 * 2 * 2
    clean = {(r["case"], r["structure"]): r["dice"] for r in rows if r["condition"] == "clean"}
    for r in rows:
        if r["condition"] == "clean":
            assert math.isnan(r["delta_dice"])
        else:
            assert r["delta_dice"] == pytest.approx(r["dice"] - clean[(r["case"], r["structure"])])
    assert {r["label"] for r in rows} == {1, 2}
    assert all(r["absent"] is False for r in rows)  # both structures in every case


def test_rows_mark_absences_also_in_older_folders(run_dir, tmp_path):
    out, _ = run_dir
    copy = tmp_path / "older"
    shutil.copytree(out, copy)
    for path in (copy / "cases").glob("*.json"):  # a case with structure 2 absent from both
        rec = json.loads(path.read_text())
        for r in rec["rows"]:
            del r["absent"]  # written before the column existed
            if rec["case"] == "case_000" and r["label"] == 2:
                r.update(volume_ref_ml=0.0, volume_pred_ml=0.0)
        path.write_text(json.dumps(rec))
    rows = ResultsFolder(copy).rows()
    absent = {(r["case"], r["label"]) for r in rows if r["absent"]}
    assert absent == {("case_000", 2)}


def test_load_reads_every_file_on_the_image_grid(run_dir):
    out, task = run_dir
    loaded = ResultsFolder(out).load("case_001", COND)
    src = read_image(task / "imagesTr" / "case_001.nii.gz")
    np.testing.assert_array_equal(loaded.case.image, src.image)
    assert loaded.case.geometry.matches(src.geometry)
    assert list(loaded.predictions) == ["clean", COND]
    rec = store.read_case(out, "case_001")
    for cond, labels in loaded.predictions.items():
        np.testing.assert_array_equal(labels, read_labels(out / rec["files"][cond])[0])
    assert loaded.focus == COND and loaded.perturbed is None  # a labels-only user attack
    assert loaded.label_ext == ".nii.gz"


def test_not_a_results_folder(tmp_path):
    with pytest.raises(ResultsFolderError, match="not a results folder"):
        ResultsFolder(tmp_path)
    (tmp_path / "run.json").write_text("{half")
    with pytest.raises(ResultsFolderError, match="run.json"):
        ResultsFolder(tmp_path)


def _copy(run_dir, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(run_dir[0], out)
    return out


def test_newer_protocol_version_is_refused(run_dir, tmp_path):
    out = _copy(run_dir, tmp_path)
    run = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**run, "protocol_version": "1.10"}))
    with pytest.raises(NewerResultsError, match=r"msd-robust 1\.10, newer than"):
        ResultsFolder(out)
    (out / "run.json").write_text(json.dumps({**run, "protocol": "future-protocol"}))
    with pytest.raises(NewerResultsError, match="unknown to this installation"):
        ResultsFolder(out)


def test_missing_prediction_file_is_named(run_dir, tmp_path):
    out = _copy(run_dir, tmp_path)
    (out / "predictions" / "case_000" / "clean.nii.gz").unlink()
    folder = ResultsFolder(out)
    with pytest.raises(MissingFilesError, match="clean.nii.gz") as err:
        folder.load("case_000")
    assert not err.value.data
    folder.load("case_001")  # the other cases still load


def test_moved_data_set_is_found_again(run_dir, tmp_path):
    _, task = run_dir
    moved = tmp_path / "elsewhere" / "Task92_Toy"
    shutil.copytree(task, moved)
    copy = _copy(run_dir, tmp_path)
    cases = json.loads((copy / "cases.json").read_text())
    for c in cases["cases"]:  # as if the data set had lived in a folder that is gone
        c["images"] = [p.replace(str(task), "/gone/Task92_Toy") for p in c["images"]]
        c["labels"] = c["labels"].replace(str(task), "/gone/Task92_Toy")
        c["root"] = "/gone/Task92_Toy"
    (copy / "cases.json").write_text(json.dumps(cases))
    folder = ResultsFolder(copy)
    with pytest.raises(MissingFilesError, match="/gone/Task92_Toy/imagesTr/case_000") as err:
        folder.load("case_000")
    assert err.value.data
    with pytest.raises(ResultsFolderError, match="not a folder"):
        folder.remap_data(tmp_path / "nothing")
    folder.remap_data(moved)
    loaded = folder.load("case_000")
    assert loaded.case.image_path == moved / "imagesTr" / "case_000.nii.gz"


def test_corrections_are_saved_beside_the_results_and_never_overwrite(run_dir, tmp_path):
    out = _copy(run_dir, tmp_path)
    folder = ResultsFolder(out)
    loaded = folder.load("case_002")
    edited = loaded.predictions["clean"].copy()
    edited[0, 0, 0] = 2
    first = folder.save_correction(loaded, "clean", edited)
    second = folder.save_correction(loaded, "clean", edited)
    assert first == out / "corrections" / "case_002" / "clean.nii.gz"
    assert second.name == "clean-2.nii.gz"
    labels, geometry, _ = read_labels(second)
    np.testing.assert_array_equal(labels, edited)
    assert geometry.matches(loaded.case.geometry)


def test_a_correction_is_saved_with_its_prompts_under_one_free_number(
    run_dir, tmp_path, monkeypatch
):
    from napari_segeval._errors import WriteError
    from napari_segeval.prompts import Box
    from napari_segeval.prompts.prompt_file import PromptFile, read_prompts
    from napari_segeval.prompts.prompt_set import PromptSet

    out = _copy(run_dir, tmp_path)
    folder = ResultsFolder(out)
    loaded = folder.load("case_002")
    labels = loaded.predictions["clean"]
    prompts = PromptFile(
        {1: PromptSet.from_box(Box(2, 2, 6, 6, index=1))}, tuple(labels.shape[:3]), {1: "liver"}
    )
    here = out / "corrections" / "case_002"
    here.mkdir(parents=True)
    (here / "corrected.prompts.json").write_text("{}")  # only the prompts name is taken
    first = folder.save_correction(loaded, "corrected", labels, prompts)
    assert first.name.startswith("corrected-2.")
    assert read_prompts(here / "corrected-2.prompts.json") == prompts
    assert (here / "corrected.prompts.json").read_text() == "{}"  # never overwritten
    # the prompts cannot be written: no label map is left without them
    import napari_segeval.prompts.prompt_file as ps

    def fail(*_a, **_k):
        raise WriteError("disk full")

    monkeypatch.setattr(ps, "write_prompts", fail)
    with pytest.raises(WriteError, match="disk full"):
        folder.save_correction(loaded, "corrected", labels, prompts)
    assert sorted(p.name for p in here.iterdir()) == sorted(
        ["corrected.prompts.json", first.name, "corrected-2.prompts.json"]
    )


SAMPLE_TASK = (
    Path(__file__).resolve().parents[2] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"
)
FGSM = "fgsm-linf eps=0.5"


def test_perturbed_image_is_computed_bit_for_bit_from_the_perturbation(fgsm_run):
    folder = ResultsFolder(fgsm_run)
    cid = folder.cases()[0]
    files = store.read_case(fgsm_run, cid)["files"]
    read = folder.check_files(cid)
    assert f"perturbation:{FGSM}" in read and f"perturbed:{FGSM}" not in read  # one file read
    loaded = folder.load(cid)
    saved = read_image(fgsm_run / files[f"perturbed:{FGSM}"]).image
    delta = read_image(fgsm_run / files[f"perturbation:{FGSM}"]).image
    assert loaded.perturbed.dtype == np.float32 and np.abs(delta).max() > 0
    np.testing.assert_array_equal(loaded.perturbed, saved)  # exactly what the attack saved
    np.testing.assert_array_equal(loaded.perturbation, delta)
    assert loaded.perturbation_range == float(np.abs(delta).max())
    assert loaded.files[f"perturbed:{FGSM}"] == str(fgsm_run / files[f"perturbed:{FGSM}"])


def test_a_record_without_the_perturbation_computes_it_from_the_perturbed_image(fgsm_run, tmp_path):
    out = tmp_path / "old"
    shutil.copytree(fgsm_run, out)
    cid = ResultsFolder(out).cases()[0]
    rec_path = out / "cases" / f"{cid}.json"
    rec = json.loads(rec_path.read_text())
    delta = read_image(out / rec["files"].pop(f"perturbation:{FGSM}")).image
    rec_path.write_text(json.dumps(rec))
    loaded = ResultsFolder(out).load(cid)
    saved = read_image(out / rec["files"][f"perturbed:{FGSM}"]).image
    np.testing.assert_array_equal(loaded.perturbed, saved)
    np.testing.assert_allclose(loaded.perturbation, delta, atol=1e-4)


def test_a_deleted_perturbation_file_is_named(fgsm_run, tmp_path):
    out = tmp_path / "gone"
    shutil.copytree(fgsm_run, out)
    cid = ResultsFolder(out).cases()[0]
    path = out / store.read_case(out, cid)["files"][f"perturbation:{FGSM}"]
    path.unlink()
    with pytest.raises(MissingFilesError, match=path.name):
        ResultsFolder(out).load(cid)


def test_counting_that_fails_leaves_the_counting_to_the_panel(fgsm_run, monkeypatch):
    from napari_segeval.metrics import live

    def no_memory(self):
        raise MemoryError("no room for the counts")

    folder = ResultsFolder(fgsm_run)
    cid = folder.cases()[0]
    assert set(folder.load(cid).counters) == {"clean", "attacked"}
    monkeypatch.setattr(live.LiveMetrics, "_recount_all", no_memory)
    loaded = folder.load(cid)
    assert loaded.counters == {} and loaded.perturbed is not None


def test_a_cancelled_load_stops_and_says_so(fgsm_run):
    import threading

    from napari_segeval import Cancelled

    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        ResultsFolder(fgsm_run).load(ResultsFolder(fgsm_run).cases()[0], cancel=cancel)
