"""Saved predictions of ``segeval evaluate``: formats, geometry, layout, resume, report links."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from _segeval_toy import TOY, toy_volume, write_msd

from napari_segeval._errors import WriteError
from napari_segeval.evaluation import run_evaluation, store
from napari_segeval.evaluation.keys import is_image_key
from napari_segeval.evaluation.layouts import CaseSpec
from napari_segeval.evaluation.protocols import CaseArrays
from napari_segeval.io import Geometry, read_image, read_labels, write_image, write_labels

SHIFT = {"name": "_segeval_toy:shift_attack", "shift": 2}
COND = "_segeval_toy:shift_attack shift=2"
PARAMS = {"model": TOY, "attacks": [SHIFT]}


def _all_files_exist(out: Path) -> None:
    for rec_path in (out / "cases").glob("*.json"):
        rec = json.loads(rec_path.read_text())
        for rel in rec.get("files", {}).values():
            assert (out / rel).is_file(), f"{rec_path.name} points at missing {rel}"


def test_every_case_and_condition_saved_with_the_source_geometry(tmp_path):
    task = write_msd(tmp_path / "Task97", 2, spacing=(3.0, 0.7, 0.9))
    out = tmp_path / "out"
    run_evaluation(task, "msd-robust", out, params=PARAMS, workers=1)
    assert json.loads((out / "run.json").read_text())["save_predictions"] is True
    for cid in ("case_000", "case_001"):
        rec = store.read_case(out, cid)
        assert set(rec["files"]) == {"clean", COND}
        assert rec["files"]["clean"] == f"predictions/{cid}/clean.nii.gz"
        src = read_image(task / "imagesTr" / f"{cid}.nii.gz")
        ref, _, _ = read_labels(task / "labelsTr" / f"{cid}.nii.gz")
        for rel in rec["files"].values():
            labels, geometry, _ = read_labels(out / rel)
            assert geometry.matches(src.geometry) and labels.shape == src.image.shape
        clean, _, _ = read_labels(out / rec["files"]["clean"])
        np.testing.assert_array_equal(clean, ref)  # the toy model is exact on clean images
        shifted, _, _ = read_labels(out / rec["files"][COND])
        assert not np.array_equal(shifted, ref)
    html = (out / "report.html").read_text()
    assert 'href="predictions/case_000/clean.nii.gz"' in html


def test_no_save_predictions_writes_none(tmp_path, capsys):
    from napari_segeval.cli import _evaluate

    parser = argparse.ArgumentParser()
    _evaluate.add_parser(parser.add_subparsers())
    task = write_msd(tmp_path / "Task96", 2)
    out = tmp_path / "out"
    args = parser.parse_args(
        [
            "evaluate",
            str(task),
            "--protocol",
            "msd-robust",
            "-o",
            str(out),
            "--param",
            f"model={TOY}",
            "--no-progress",
            "--no-save-predictions",
        ]
    )
    assert args.func(args) == 0
    assert not (out / "predictions").exists()
    assert json.loads((out / "run.json").read_text())["save_predictions"] is False
    assert store.read_case(out, "case_000")["files"] == {}
    assert "not saved" not in (out / "report.html").read_text()


def test_resume_after_a_kill_never_leaves_a_record_without_its_files(tmp_path, monkeypatch):
    task = write_msd(tmp_path / "Task95", 4)
    out = tmp_path / "out"
    real = store.write_json

    def killed_after_files(path, payload):  # dies between case_002's files and its record
        if Path(path).name == "case_002.json":
            raise KeyboardInterrupt
        return real(path, payload)

    monkeypatch.setattr(store, "write_json", killed_after_files)
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(task, "msd-robust", out, params=PARAMS, workers=1)
    monkeypatch.setattr(store, "write_json", real)
    assert not store.is_done(out, "case_002")
    partial = out / "predictions" / "case_002" / "clean.nii.gz"
    assert partial.is_file()  # files of the unfinished case are there, its record is not
    partial.write_bytes(b"torn")  # as if a later crash had damaged it
    _all_files_exist(out)
    r = run_evaluation(task, "msd-robust", out, params=PARAMS, workers=1)
    assert (r.n_skipped, r.n_ok) == (2, 4)
    _all_files_exist(out)
    labels, _, _ = read_labels(partial)  # replaced by the re-run
    assert labels.shape == toy_volume(2)[1].shape


def test_files_of_a_finished_case_are_never_overwritten(tmp_path):
    task = write_msd(tmp_path / "Task94", 1)
    out = tmp_path / "out"
    run_evaluation(task, "msd-robust", out, params={"model": TOY}, workers=1, report=False)
    with pytest.raises(WriteError, match="finished"):
        store.write_files(out, "case_000", {"clean": ("predictions/case_000/clean.nii.gz", b"x")})
    with pytest.raises(WriteError, match="outside"):
        store.write_files(out, "case_new", {"clean": ("cases/case_000.json", b"x")})


def test_restart_discards_old_predictions(tmp_path):
    task = write_msd(tmp_path / "Task93", 2)
    out = tmp_path / "out"
    run_evaluation(task, "msd-robust", out, params=PARAMS, workers=1, report=False)
    stale = out / "predictions" / "case_000" / "stale.nii.gz"
    stale.write_bytes(b"old run")
    (out / "corrections").mkdir()
    (out / "corrections" / "keep.nii.gz").write_bytes(b"mine")
    run_evaluation(task, "msd-robust", out, params=PARAMS, workers=1, resume=False, report=False)
    assert not stale.exists() and (out / "corrections" / "keep.nii.gz").is_file()
    _all_files_exist(out)


def _raster_task(root: Path, suffix: str, rgb: bool = False) -> list[CaseSpec]:
    from PIL import Image

    root.mkdir()
    img = np.zeros((12, 16), np.uint8)
    img[3:8, 4:10] = 1
    img[8:11, 11:15] = 2
    lab = img.copy()
    pixels = np.stack([img * 100] * 3, -1).astype(np.uint8) if rgb else img
    if suffix == ".png":
        Image.fromarray(pixels).save(root / f"a{suffix}")
    else:
        write_image(root / f"a{suffix}", pixels, Geometry.identity(2))
    write_labels(root / "a_seg.png", lab, Geometry.identity(2))
    return [
        CaseSpec(
            "a",
            (str(root / f"a{suffix}"),),
            str(root / "a_seg.png"),
            root=str(root),
            structures={1: "one", 2: "two"},
        )
    ]


@pytest.mark.parametrize(
    "suffix,rgb,ext", [(".png", False, ".png"), (".png", True, ".png"), (".tif", False, ".tif")]
)
def test_2d_images_save_png_or_tiff_label_maps(tmp_path, suffix, rgb, ext):
    specs = _raster_task(tmp_path / "data", suffix, rgb)
    out = tmp_path / "out"
    run_evaluation(specs, "msd-robust", out, params=PARAMS, workers=1, report=False)
    rec = store.read_case(out, "a")
    assert rec["status"] == "ok", rec.get("error")
    assert rec["files"]["clean"] == f"predictions/a/clean{ext}"
    labels, geometry, _ = read_labels(out / rec["files"]["clean"])
    ref, _, _ = read_labels(tmp_path / "data" / "a_seg.png")
    np.testing.assert_array_equal(labels, ref)
    assert geometry == Geometry.identity(2)


def test_float_images_keep_values_and_grid_in_every_format(tmp_path):
    rng = np.random.default_rng(0)
    cases = [
        (
            "ct.nii.gz",
            "zyx",
            Geometry((2.5, 0.8, 0.7), (1.0, -2.0, 3.0), (1, 0, 0, 0, 1, 0, 0, 0, 1)),
            (4, 5, 6),
            ".nii.gz",
        ),
        (
            "ct.mhd",
            "zyx",
            Geometry((2.0, 1.0, 1.0), (5.0, 6.0, 7.0), (0, 1, 0, 1, 0, 0, 0, 0, 1)),
            (4, 5, 6),
            ".mha",
        ),
        ("polyp.jpg", "yxc", Geometry.identity(2), (5, 6, 3), ".tif"),
        ("echo.mp4", "tyx", Geometry.identity(3), (3, 5, 6), ".mha"),
        ("clip", "tyxc", Geometry.identity(3), (3, 5, 6, 3), ".mha"),
        # multi-channel MSD volumes: (C, z, y, x) floats as a 4D file, channels first
        (
            "brain.nii.gz",
            "czyx",
            Geometry((2.5, 0.8, 0.7), (1.0, -2.0, 3.0), (0, 1, 0, 1, 0, 0, 0, 0, 1)),
            (2, 4, 5, 6),
            ".nii.gz",
        ),
        ("brain.mha", "czyx", Geometry.identity(3, (2.0, 1.0, 1.5)), (2, 4, 5, 6), ".mha"),
    ]
    for source, axes, geometry, shape, ext in cases:
        grid = shape[:-1] if axes.endswith("c") and axes != "czyx" else shape
        grid = shape[1:] if axes == "czyx" else grid
        arrays = {
            "clean": rng.integers(0, 3, grid).astype(np.uint8),
            "perturbed:fgsm": rng.normal(size=shape).astype(np.float32),
            "perturbation:fgsm": rng.normal(size=shape).astype(np.float32),
        }
        payload = store.encode_arrays("c", CaseArrays(geometry, axes, source, arrays))
        folder = tmp_path / source.replace(".", "_")
        written = store.write_files(folder, "c", payload)
        for key, rel in written.items():
            path = folder / rel
            if is_image_key(key):
                assert path.name.endswith(ext), (source, path.name)
                got = read_image(path)
                np.testing.assert_array_equal(got.image, arrays[key])
                g = got.geometry.sub(3) if axes == "czyx" else got.geometry
                assert g.matches(geometry), source
            else:
                labels, g, _ = read_labels(path)
                np.testing.assert_array_equal(labels, arrays[key])
                assert g.matches(geometry), source


def test_tiff_holds_only_the_pixel_grid(tmp_path):
    with pytest.raises(WriteError, match="TIFF cannot store this geometry"):
        write_image(
            tmp_path / "x.tif",
            np.zeros((2, 3, 4), np.float32),
            Geometry.identity(3, (2.0, 1.0, 1.0)),
        )
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_files_that_cannot_be_saved_keep_the_scores_and_are_reported(tmp_path, monkeypatch, capsys):
    from napari_segeval._errors import SegEvalError
    from napari_segeval.cli import main

    def refuse(case_id, arrays):
        raise SegEvalError(f"{case_id}: no room on the disk")

    monkeypatch.setattr(store, "encode_arrays", refuse)
    task = write_msd(tmp_path / "Task97", 2)
    out = tmp_path / "out"
    code = main(
        [
            "evaluate",
            str(task),
            "--protocol",
            "msd-robust",
            "--param",
            f"model={TOY}",
            "-o",
            str(out),
            "--workers",
            "1",
            "--no-report",
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and "2 ok" in text
    assert "warning: prediction files of 2 case(s) not saved" in text
    assert "case_000: no room on the disk" in text
    summary = json.loads((out / "summary.json").read_text())
    assert [f["case"] for f in summary["files_not_saved"]] == ["case_000", "case_001"]
    assert store.read_case(out, "case_000")["files"] == {}
