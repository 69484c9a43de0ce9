"""Risk rows of a risk_run and the worklist read back (evaluation.triage, slices.csv)."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from napari_segeval._errors import ReadError
from napari_segeval.evaluation import run_evaluation, store
from napari_segeval.evaluation.rows import SLICES
from napari_segeval.evaluation.triage import (
    FLAG_SEPARATOR,
    dense_risk_rows,
    rank,
    risk_rows,
    worklist,
)
from napari_segeval.propagation.result import StructureResult
from napari_segeval.uncertainty.risk import Flag

TASK = Path(__file__).resolve().parents[2] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"


def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_promptable_run_writes_a_risk_per_structure_and_per_slice(risk_run):
    rows = _csv(risk_run / "results.csv")
    assert rows and all(0.0 <= float(r["risk"]) <= 1.0 for r in rows)
    slices = _csv(risk_run / "slices.csv")
    assert set(slices[0]) <= {c.name for c in SLICES.columns}
    assert {r["structure"] for r in slices} == {r["structure"] for r in rows}
    for r in slices:
        assert 0.0 <= float(r["risk"]) <= 1.0 and 0.0 <= float(r["dice"]) <= 1.0
        assert all(f in {x.value for x in Flag} for f in r["flags"].split(FLAG_SEPARATOR) if f)


def test_slices_cover_the_reference_the_prediction_and_the_slice_after_each_end(risk_run):
    from napari_segeval.io import read_case

    case = read_case(TASK / "imagesTr/abd_001.nii.gz", labels=TASK / "labelsTr/abd_001.nii.gz")
    slices = _csv(risk_run / "slices.csv")
    liver = {int(r["slice"]) for r in slices if r["structure"] == "liver"}
    ref = set(np.flatnonzero((case.labels == 1).any(axis=(1, 2))).tolist())
    assert ref <= liver
    assert min(liver) <= min(ref) and max(liver) >= max(ref)


def test_the_worklist_is_riskiest_first_with_its_flagged_slices(risk_run):
    items = worklist(risk_run)
    assert len(items) == 5
    assert [w.risk for w in items] == sorted((w.risk for w in items), reverse=True)
    for w in items:
        assert not math.isnan(w.dice)
        assert [f.risk for f in w.flagged] == sorted((f.risk for f in w.flagged), reverse=True)
        assert w.first_slice is None or w.first_slice == w.flagged[0].slice
    d = items[0].to_dict()
    assert set(d) == {"case", "structure", "model", "condition", "risk", "dice", "flagged"}


def test_a_folder_written_before_risks_says_so(risk_run, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(risk_run, old)
    rows = _csv(old / "results.csv")
    with open(old / "results.csv", "w", newline="") as fh:
        cols = [c for c in rows[0] if c != "risk"]
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    (old / "slices.csv").unlink()
    with pytest.raises(ReadError, match="before risks were estimated"):
        worklist(old)
    with pytest.raises(ReadError, match="no results.csv"):
        worklist(tmp_path / "nothing")


def test_risk_rows_score_each_slice_against_the_reference():
    m = np.zeros((5, 6, 6), bool)
    m[1:3, 1:5, 1:5] = True
    s = StructureResult(2, (0, 0, 0), m.astype(np.float32), m, m.shape)
    ref = np.zeros(m.shape, np.uint8)
    ref[2:4, 1:5, 1:3] = 2
    risks, rows = risk_rows({2: s}, {2: m}, {2: "kidney"}, model="m", reference=ref)
    assert {r["slice"]: r["dice"] for r in rows} == pytest.approx({1: 0.0, 2: 2 / 3, 3: 0.0})
    assert set(risks) == {2} and rows[0]["structure"] == "kidney"
    _, no_ref = risk_rows({2: s}, {2: m}, {2: "kidney"}, model="m")
    assert [r["slice"] for r in no_ref] == [1, 2] and "dice" not in no_ref[0]


def test_dense_risk_rows_describe_each_structure_of_a_label_map():
    labels = np.zeros((5, 6, 6), np.uint8)
    labels[1:3, 1:5, 1:5] = 1
    labels[3, 1:3, 1:3] = 2
    probs = np.stack([labels == k for k in range(3)]).astype(np.float32)
    ref = np.zeros_like(labels)
    ref[2:4, 1:5, 1:5] = 1
    wrong = np.where(labels == 1, 0, labels).astype(np.uint8)  # an augmented pass loses 1
    risks, rows = dense_risk_rows(
        labels, probs, {1: "liver", 2: "spleen"}, model="m", condition="pgd",
        reference=ref, augmented=[labels, wrong],
    )  # fmt: skip
    liver = {r["slice"]: r for r in rows if r["label"] == 1}
    assert {k: r["dice"] for k, r in liver.items()} == pytest.approx({1: 0.0, 2: 1.0, 3: 0.0})
    assert liver[1]["tta"] == pytest.approx(0.5) and liver[1]["condition"] == "pgd"
    assert "test-time augmentations disagree" in liver[1]["flags"]
    spleen = [r for r in rows if r["label"] == 2]
    assert [r["slice"] for r in spleen] == [3] and spleen[0]["tta"] == pytest.approx(0.0)
    assert set(risks) == {1, 2} and all(0.0 < r.risk < 1.0 for r in risks.values())


@pytest.fixture(scope="module")
def unlabelled(tmp_path_factory) -> tuple[Path, Path]:
    """The sample task's first case without its labels folder, and a folder with its
    prompts file (the boxes the reference would give, as the viewer saves them)."""
    import json

    from napari_segeval.evaluation.protocols._promptable import prompt_sets, reference_prompts
    from napari_segeval.io import read_case
    from napari_segeval.prompts.prompt_file import PromptFile, write_prompts

    root = tmp_path_factory.mktemp("unlabelled")
    data = root / "Task90_NoLabels"
    (data / "imagesTr").mkdir(parents=True)
    shutil.copy(TASK / "imagesTr/abd_001.nii.gz", data / "imagesTr")
    ds = json.loads((TASK / "dataset.json").read_text())
    ds["training"] = ds["training"][:1]
    (data / "dataset.json").write_text(json.dumps(ds))
    case = read_case(TASK / "imagesTr/abd_001.nii.gz", labels=TASK / "labelsTr/abd_001.nii.gz")
    boxes = reference_prompts(case.labels, case.structures, jitter=0, rng=np.random.default_rng(0))
    prompts = root / "prompts"
    prompts.mkdir()
    pf = PromptFile(prompt_sets(boxes, case.labels, "box"), case.labels.shape, case.structures)
    write_prompts(prompts / "abd_001.prompts.json", pf)
    return data, prompts


def test_a_data_set_without_labels_runs_from_prompts_files(unlabelled, tmp_path):
    data, prompts = unlabelled
    out = tmp_path / "run"
    res = run_evaluation(data, "medsam2-3d", out, params={"prompts": str(prompts)}, workers=1)
    assert res.n_ok == 1 and res.n_failed == 0
    rows = _csv(out / "results.csv")
    assert len(rows) == 5 and all("dice" not in r for r in rows)  # nothing invented
    assert all(0.0 <= float(r["risk"]) <= 1.0 for r in rows)
    slices = _csv(out / "slices.csv")
    assert slices and "dice" not in slices[0]
    items = worklist(out)
    assert len(items) == 5 and all(math.isnan(w.dice) for w in items)
    report = (out / "report.html").read_text()
    assert "<h2>Worklist</h2>" in report and "no reference labels" in report
    assert "Dice per structure" not in report


def test_without_labels_and_without_a_prompts_file_the_case_says_so(unlabelled, tmp_path):
    data, _ = unlabelled
    empty = tmp_path / "none"
    empty.mkdir()
    res = run_evaluation(
        data, "medsam2-3d", tmp_path / "run", params={"prompts": str(empty)}, report=False
    )
    assert res.n_failed == 1
    rows = _csv(tmp_path / "run" / "results.csv")
    assert "no prompts file abd_001.prompts.json" in rows[0]["error"]


def test_a_prompts_file_for_another_image_is_refused_in_one_line(unlabelled, tmp_path):
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.prompt_file import PromptFile, write_prompts
    from napari_segeval.prompts.prompt_set import PromptSet

    data, _ = unlabelled
    bad = tmp_path / "bad"
    bad.mkdir()
    sets = {1: PromptSet.from_box(Box(1, 1, 4, 4, index=1, label=1))}
    write_prompts(bad / "abd_001.prompts.json", PromptFile(sets, (3, 8, 8), {1: "liver"}))
    run_evaluation(data, "medsam2-3d", tmp_path / "run", params={"prompts": str(bad)}, report=False)
    error = _csv(tmp_path / "run" / "results.csv")[0]["error"]
    assert "the prompts are for an image of shape [3, 8, 8]" in error
    assert "\n" not in error


def test_the_prompts_parameter_must_be_a_folder(unlabelled, tmp_path):
    from napari_segeval._errors import SegEvalError

    data, prompts = unlabelled
    with pytest.raises(SegEvalError, match="parameter prompts must be a folder"):
        run_evaluation(
            data, "medsam2-3d", tmp_path / "run", params={"prompts": str(prompts / "x.json")}
        )


def test_a_results_folder_reads_its_risks_back_as_the_worklist_does(risk_run, unlabelled_run):
    from napari_segeval.evaluation.results import ResultsFolder
    from napari_segeval.uncertainty.risk import Signal

    for out, reference in ((risk_run, True), (unlabelled_run, False)):
        folder = ResultsFolder(out)
        assert folder.has_risk and folder.has_reference is reference
        items = rank(folder.raw_rows(), store.slice_rows(folder.records.values()))
        assert [(w.key, w.first_slice) for w in items] == [
            (w.key, w.first_slice) for w in worklist(out)
        ]  # the case records and results.csv + slices.csv agree
        slices = _csv(out / "slices.csv")
        for w in items:
            row = next(r for r in folder.rows() if (r["case"], r["structure"]) == w.key[:2])
            risk = folder.case_risks(w.case, w.condition, w.model)[row["label"]]
            assert risk.risk == pytest.approx(w.risk)
            assert risk.riskiest_slice == (w.first_slice or risk.riskiest_slice)
            mine = [r for r in slices if (r["case"], r["structure"]) == (w.case, w.structure)]
            assert [s.slice for s in risk.slices] == sorted(int(r["slice"]) for r in mine)
            for s in risk.slices:
                r = next(r for r in mine if int(r["slice"]) == s.slice)
                assert s.risk == pytest.approx(float(r["risk"])) and s.area == int(r["area"])
                assert s.signals[Signal.ENTROPY] == pytest.approx(float(r["entropy"]))
                assert [f.value for f in s.flags] == [f for f in r["flags"].split("; ") if f]
            # a stop read back: a slice flagged "the chain stopped here" that holds a mask
            assert {k for k, _ in risk.stops} == {
                int(r["slice"])
                for r in mine
                if Flag.STOPPED.value in r["flags"] and int(r["area"]) > 0
            }
    assert any(
        r.stops
        for w in worklist(risk_run)
        for r in ResultsFolder(risk_run).case_risks(w.case).values()
    )  # the sample's tumour chain stops on the built-in model's confidence
    assert ResultsFolder(risk_run).case_risks("abd_001", "pgd") == {}  # no such prediction
