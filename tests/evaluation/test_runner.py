"""The runner: outputs, resume after a kill, error rows, local pool and Dask equal inline."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from _segeval_toy import TOY, toy_volume, write_msd

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation import run_evaluation, store

PARAMS = {"model": TOY, "attacks": [{"name": "_segeval_toy:shift_attack", "shift": 2}]}


def read_rows(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_outputs_columns_and_numbers(msd_task, tmp_path):
    out = tmp_path / "out"
    seen = []
    r = run_evaluation(
        msd_task,
        "msd-robust",
        out,
        params=PARAMS,
        workers=1,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert (r.n_cases, r.n_ok, r.n_failed, r.exit_code) == (4, 4, 0, 0)
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]  # once before the first case
    rows = read_rows(out / "results.csv")
    assert {
        "case",
        "structure",
        "condition",
        "dice",
        "protocol",
        "protocol_version",
        "status",
    } <= set(rows[0])
    assert len(rows) == 4 * 2 * 2  # cases x structures x conditions
    clean = [float(x["dice"]) for x in rows if x["condition"] == "clean"]
    assert clean == [1.0] * 8  # the toy model is exact on clean images
    shifted = [
        float(x["dice"]) for x in rows if x["condition"] == "_segeval_toy:shift_attack shift=2"
    ]
    assert max(shifted) < 1.0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["protocol"] == "msd-robust" and summary["params"]["attacks"] == PARAMS["attacks"]
    assert summary["results"]["task_mean"]["clean"] == 1.0
    assert 0.0 <= summary["results"]["robust_fraction"]["_segeval_toy:shift_attack shift=2"] <= 1.0
    assert (out / "report.html").stat().st_size > 1000


def test_resume_after_simulated_kill(msd_task, tmp_path):
    killed = tmp_path / "killed"

    def die_after_two(done, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_evaluation(
            msd_task, "msd-robust", killed, params=PARAMS, workers=1, progress=die_after_two
        )
    assert sorted(p.name for p in (killed / "cases").glob("*.json")) == [
        "case_000.json",
        "case_001.json",
    ]
    (killed / "cases" / ".case_002.json.abc.tmp").write_text("{half a rec")  # torn write
    seen = []
    resumed = run_evaluation(
        msd_task,
        "msd-robust",
        killed,
        params=PARAMS,
        workers=1,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert (resumed.n_skipped, resumed.n_ok) == (2, 4)
    assert seen == [(2, 4), (3, 4), (4, 4)]  # starts at the resumed cases
    fresh = tmp_path / "fresh"
    run_evaluation(msd_task, "msd-robust", fresh, params=PARAMS, workers=1)
    assert read_rows(killed / "results.csv") == read_rows(fresh / "results.csv")


def test_resume_refuses_another_recipe_and_restart_discards(msd_task, tmp_path):
    out = tmp_path / "out"
    run_evaluation(msd_task, "msd-robust", out, params={"model": TOY}, workers=1, report=False)
    with pytest.raises(SegEvalError, match="resume needs the same recipe"):
        run_evaluation(
            msd_task, "msd-robust", out, params={"model": TOY, "overlap": 0.25}, workers=1
        )
    r = run_evaluation(
        msd_task,
        "msd-robust",
        out,
        params={"model": TOY, "overlap": 0.25},
        workers=1,
        resume=False,
        report=False,
    )
    assert (r.n_skipped, r.n_ok) == (0, 4)


def test_resume_over_a_run_record_that_is_not_an_object_is_one_line(msd_task, tmp_path):
    from napari_segeval._errors import ReadError

    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text("[]")
    with pytest.raises(ReadError) as err:
        run_evaluation(msd_task, "msd-robust", out, params={"model": TOY}, workers=1)
    assert str(err.value) == (
        f"{out / 'run.json'}: not a results record (not a JSON object); "
        "use another --output-dir, or --restart to discard it"
    )
    r = run_evaluation(
        msd_task, "msd-robust", out, params={"model": TOY}, workers=1, resume=False, report=False
    )
    assert r.n_ok == 4


def broken_task(root):
    from napari_segeval.io import Geometry, write_image, write_labels

    extra = [
        {"image": "./imagesTr/corrupt.nii.gz", "label": "./labelsTr/case_000.nii.gz"},
        {"image": "./imagesTr/missing.nii.gz", "label": "./labelsTr/missing.nii.gz"},
        {"image": "./imagesTr/mismatch.nii.gz", "label": "./labelsTr/mismatch.nii.gz"},
        {"image": "./imagesTr/bad_model.nii.gz", "label": "./labelsTr/bad_model.nii.gz"},
        {"image": "../outside.nii.gz", "label": "./labelsTr/case_000.nii.gz"},
    ]
    write_msd(root, 2, extra_training=extra)
    (root / "imagesTr" / "corrupt.nii.gz").write_bytes(b"\x1f\x8b garbage, not a volume")
    image, labels = toy_volume(7)
    g = Geometry.identity(3, (2.0, 1.0, 1.0))
    write_image(root / "imagesTr" / "mismatch.nii.gz", image, g)
    write_labels(root / "labelsTr" / "mismatch.nii.gz", labels[:, :-2], g)
    write_image(root / "imagesTr" / "bad_model.nii.gz", image, g)
    write_labels(root / "labelsTr" / "bad_model.nii.gz", labels, g)
    write_image(root.parent / "outside.nii.gz", image, g)
    return root


def test_bad_cases_become_error_rows(tmp_path):
    task = broken_task(tmp_path / "Task98_Broken")
    out = tmp_path / "out"
    r = run_evaluation(
        task, "msd-robust", out, params={"model": "_segeval_toy:failing_dense"}, workers=1
    )
    assert (r.n_ok, r.n_failed, r.exit_code) == (2, 5, 3)
    reasons = {f["case"]: f["error"] for f in r.summary["failed"]}
    assert "corrupt.nii.gz" in reasons["corrupt"]
    assert "no such file" in reasons["missing"]
    assert "same grid" in reasons["mismatch"] or "shape" in reasons["mismatch"]
    assert reasons["bad_model"] == "RuntimeError: model blew up"
    assert "escapes the data-set folder" in reasons["outside"]
    rows = read_rows(out / "results.csv")
    errors = [x for x in rows if x["status"] == "error"]
    assert sorted(x["case"] for x in errors) == sorted(reasons)
    assert all(x["error"] for x in errors)
    assert "Failed cases" in (out / "report.html").read_text()


def test_process_pool_equals_inline(msd_task, tmp_path):
    run_evaluation(msd_task, "msd-robust", tmp_path / "a", params=PARAMS, workers=1, report=False)
    r = run_evaluation(
        msd_task, "msd-robust", tmp_path / "b", params=PARAMS, workers=2, report=False
    )
    assert r.n_ok == 4
    assert read_rows(tmp_path / "a" / "results.csv") == read_rows(tmp_path / "b" / "results.csv")


def test_dask_local_cluster_equals_local(msd_task, tmp_path):
    distributed = pytest.importorskip("distributed")
    run_evaluation(
        msd_task, "msd-robust", tmp_path / "local", params=PARAMS, workers=1, report=False
    )
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        r = run_evaluation(
            msd_task, "msd-robust", tmp_path / "dask", params=PARAMS, scheduler=client, report=False
        )
    assert r.n_ok == 4
    assert read_rows(tmp_path / "local" / "results.csv") == read_rows(
        tmp_path / "dask" / "results.csv"
    )


def test_case_records_are_json_and_views_plain_arrays(msd_task, tmp_path):
    out = tmp_path / "out"
    run_evaluation(msd_task, "msd-robust", out, params={"model": TOY}, workers=1, report=False)
    rec = store.read_case(out, "case_001")
    assert rec["status"] == "ok" and rec["views"] == ["image", "pred:clean", "reference"]
    views = store.read_views(out, "case_001")  # np.load(allow_pickle=False)
    assert views["image"].dtype == np.uint8 and views["reference"].shape == views["image"].shape


def test_case_filenames_are_safe_and_distinct():
    a, b = store.case_filename("x/y"), store.case_filename("x_y")
    assert "/" not in a and a != b


def test_worker_crash_is_isolated_to_its_case(tmp_path):
    from napari_segeval.io import Geometry, write_image, write_labels

    task = write_msd(
        tmp_path / "Task93",
        3,
        extra_training=[{"image": "./imagesTr/crash.nii.gz", "label": "./labelsTr/crash.nii.gz"}],
    )
    image, labels = toy_volume(9)
    g = Geometry.identity(3, (2.0, 1.0, 1.0))
    write_image(task / "imagesTr" / "crash.nii.gz", image, g)
    write_labels(task / "labelsTr" / "crash.nii.gz", labels, g)
    r = run_evaluation(
        task,
        "msd-robust",
        tmp_path / "o",
        params={"model": "_segeval_toy:crashing_dense"},
        workers=2,
        report=False,
    )
    assert (r.n_ok, r.n_failed) == (3, 1)
    assert r.summary["failed"] == [
        {"case": "crash", "error": "worker process died (crash or out of memory)"}
    ]


def test_dask_gpu_workers_get_one_case_at_a_time(msd_task, tmp_path):
    distributed = pytest.importorskip("distributed")
    import _segeval_toy

    _segeval_toy._Active.most = 0
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=3,
        processes=False,
        resources={"GPU": 1},
        dashboard_address=None,
    ) as cluster:
        r = run_evaluation(
            msd_task,
            "msd-robust",
            tmp_path / "o",
            params={"model": "_segeval_toy:concurrency_dense"},
            scheduler=cluster.scheduler_address,
            report=False,
        )
    assert r.n_ok == 4
    assert _segeval_toy._Active.most == 1  # {"GPU": 1} per case on a 1-GPU worker
