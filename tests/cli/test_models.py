"""``segeval models list/pull/path``, then other commands with the pulled model by name.

A local hub (tests/models/hub_server.py) serves small random checkpoints made here;
``HF_ENDPOINT`` points at it and ``HF_HUB_CACHE`` at tmp_path.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))  # for hub_server

from hub_server import files_in, serve, tiny_checkpoint, tiny_entry

from napari_segeval.cli import main
from napari_segeval.io import read_labels

pytest.importorskip("huggingface_hub", reason="huggingface_hub (extra 'models') not installed")

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
CT, CT_LABELS = SAMPLES / "ct" / "ct_001.nii.gz", SAMPLES / "ct" / "ct_001_labels.nii.gz"
DATA = tiny_checkpoint()


@pytest.fixture
def hub(monkeypatch, tmp_path):
    server = serve(monkeypatch, tmp_path / "cache", tiny_entry(DATA), DATA)
    yield server
    server.close()


def _json(capsys) -> dict:
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # exactly one JSON object
    return json.loads(out)


def _one_line_error(capsys, start: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(start), err
    return err


def test_list_shows_every_model_and_json_has_the_cards(hub, capsys):
    assert main(["models", "list"]) == 0
    table = capsys.readouterr().out
    for name in (
        "MedSAM2_latest",
        "MedSAM2_2411",
        "MedSAM2_US_Heart",
        "MedSAM2_MRI_LiverLesion",
        "MedSAM2_CTLesion",
        "sam2.1-tiny",
        "sam2.1-small",
        "sam2.1-base-plus",
        "sam2.1-large",
        "builtin",
        "threshold",
        "builtin-ct",
        "test-tiny",
    ):
        assert f"\n{name} " in table
    assert "CC-BY-SA-4.0" in table and "Apache-2.0" in table and "898 MB" in table
    assert main(["models", "list", "--json"]) == 0
    rows = {r["name"]: r for r in _json(capsys)["models"]}
    assert rows["sam2.1-large"]["sha256"].startswith("2647878d") and not rows["test-tiny"]["here"]
    assert rows["MedSAM2_latest"]["network"] == "medsam2"
    assert rows["MedSAM2_latest"]["config"] == "sam2.1_hiera_t512.yaml"
    assert rows["sam2.1-base-plus"]["config"] == "sam2:configs/sam2.1/sam2.1_hiera_b+.yaml"
    assert (rows["MedSAM2_CTLesion"]["input_px"], rows["sam2.1-tiny"]["input_px"]) == (512, 1024)
    assert "not medical scans" in rows["sam2.1-small"]["card"]["trained_on"]
    for name in ("builtin", "builtin-ct"):
        card = rows[name]["card"]
        assert "generated phantoms" in card["trained_on"] and "real scans" in card["not_for"]
        assert card["intended_use"].startswith("trying the tool")


def test_pull_then_path_then_list(hub, tmp_path, capsys):
    assert main(["models", "pull", "test-tiny", "--json"]) == 0
    got = _json(capsys)
    assert got["downloaded"] and got["sha256"] == hashlib.sha256(DATA).hexdigest()
    assert main(["models", "pull", "test-tiny"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("test-tiny: already here, SHA-256 checked") and got["path"] in text
    assert main(["models", "path", "test-tiny"]) == 0
    assert capsys.readouterr().out.strip() == got["path"]
    assert main(["models", "list", "--json"]) == 0
    rows = {r["name"]: r for r in _json(capsys)["models"]}
    assert rows["test-tiny"]["here"] and rows["test-tiny"]["path"] == got["path"]
    assert main(["models", "path", "builtin"]) == 0
    assert capsys.readouterr().out.strip().endswith("builtin-prompt.pt")


def test_bad_names_offline_and_not_pulled_are_one_line(hub, tmp_path, capsys, monkeypatch):
    assert main(["models", "pull", "MedSAM2-latest"]) == 2
    _one_line_error(
        capsys, "segeval models: error: unknown model 'MedSAM2-latest' (closest: MedSAM2_latest"
    )
    assert main(["models", "path", "sam2.1-small"]) == 2
    _one_line_error(
        capsys, "segeval models: error: sam2.1-small is not here: segeval models pull sam2.1-small"
    )
    assert main(["models", "pull", "builtin"]) == 2
    _one_line_error(capsys, "segeval models: error: builtin ships with napari-segeval")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["models", "pull", "sam2.1-large"]) == 2
    err = _one_line_error(
        capsys, "segeval models: error: offline (HF_HUB_OFFLINE is set): fetch http://127.0.0.1:"
    )
    assert (
        "/facebook/sam2.1-hiera-large/resolve/665f8e2ad61cf5f53d65644ff27c8ee525124610/"
        "sam2.1_hiera_large.pt (898 MB) on a connected machine and put it at " in err
    )
    assert files_in(tmp_path / "cache") == [] and hub.requests == []


def test_propagate_with_the_pulled_model_by_name_on_the_ct_sample(hub, tmp_path, capsys):
    out = tmp_path / "pred.nii.gz"
    argv = [
        "propagate",
        str(CT),
        "--labels",
        str(CT_LABELS),
        "--structure",
        "liver",
        "--model",
        "test-tiny",
        "--device",
        "cpu",
        "-o",
        str(out),
        "--json",
    ]
    assert main(argv) == 2  # not pulled yet: one line, nothing written
    _one_line_error(
        capsys, "segeval propagate: error: test-tiny is not here: segeval models pull test-tiny"
    )
    assert not out.exists()
    assert main(["models", "pull", "test-tiny", "--json"]) == 0
    capsys.readouterr()
    assert main(argv) == 0
    payload = _json(capsys)
    assert [r["label"] for r in payload["structures"]] == [1]
    pred, _, _ = read_labels(out)
    assert pred.shape == (40, 112, 112) and set(np.unique(pred)) <= {0, 1}


def test_attack_and_evaluate_take_the_pulled_name(hub, tmp_path, capsys, tiny_ct_files):
    import shutil

    assert main(["models", "pull", "test-tiny", "--json"]) == 0
    capsys.readouterr()
    folder, _, _ = tiny_ct_files
    rc = main(
        [
            "attack",
            str(folder / "ct.nii.gz"),
            "--labels",
            str(folder / "seg.nii.gz"),
            "--model",
            "test-tiny",
            "--attack",
            "fgsm",
            "--eps",
            "0.05",
            "--device",
            "cpu",
            "--output-dir",
            str(tmp_path / "attack"),
            "--json",
        ]
    )
    assert rc == 0 and _json(capsys)
    src = SAMPLES / "msd_task" / "Task90_AbdomenPhantom"
    task = tmp_path / "Task90_AbdomenPhantom"
    (task / "imagesTr").mkdir(parents=True)
    (task / "labelsTr").mkdir()
    ds = json.loads((src / "dataset.json").read_text())
    ds["training"] = [e for e in ds["training"] if "abd_001" in e["image"]]
    (task / "dataset.json").write_text(json.dumps(ds))
    for sub in ("imagesTr", "labelsTr"):
        shutil.copy(src / sub / "abd_001.nii.gz", task / sub / "abd_001.nii.gz")
    rc = main(
        [
            "evaluate",
            str(task),
            "--protocol",
            "medsam2-3d",
            "--param",
            "model=test-tiny",
            "-o",
            str(tmp_path / "eval"),
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    assert rc == 0
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["n_ok"] == 1 and summary["params"]["model"] == "test-tiny"


def test_medsam2_uses_the_pulled_medsam2_latest(monkeypatch, tmp_path, capsys, medsam2_checkpoint):
    from napari_segeval.io import Geometry, write_image, write_labels
    from napari_segeval.models import catalogue

    data = medsam2_checkpoint.read_bytes()
    entry = replace(catalogue.CATALOGUE["MedSAM2_latest"], sha256=None, size=len(data))
    server = serve(monkeypatch, tmp_path / "cache", entry, data)
    img = np.full((3, 40, 48), -100, np.int16)
    lab = np.zeros(img.shape, np.uint8)
    lab[1:3, 10:28, 12:34] = 1
    img[lab > 0] = 80
    geom = Geometry((2.0, 1.0, 1.0), (0.0, 0.0, 0.0), tuple(np.eye(3).ravel()))
    write_image(tmp_path / "img.nii.gz", img, geom)
    write_labels(tmp_path / "lab.nii.gz", lab, geom)
    argv = [
        "propagate",
        str(tmp_path / "img.nii.gz"),
        "--labels",
        str(tmp_path / "lab.nii.gz"),
        "--model",
        "medsam2",
        "--device",
        "cpu",
        "-o",
        str(tmp_path / "pred.nii.gz"),
    ]
    try:
        assert main(argv) == 2
        _one_line_error(
            capsys,
            "segeval propagate: error: model 'medsam2' needs a checkpoint: "
            "segeval models pull MedSAM2_latest",
        )
        assert main(["models", "pull", "MedSAM2_latest", "--no-progress"]) == 0
        capsys.readouterr()
    finally:
        server.close()
    assert main(argv) == 0
    assert "(medsam2 model," in capsys.readouterr().out
    assert read_labels(tmp_path / "pred.nii.gz")[0].shape == img.shape


def test_litemedsam_row_says_here_or_how_to_install(monkeypatch, capsys):
    import importlib.metadata as md

    from napari_segeval.models.catalogue import PACKAGED

    entry = PACKAGED["litemedsam"]
    installed = True
    try:
        md.distribution(entry.distribution)
    except md.PackageNotFoundError:
        installed = False
    assert main(["models", "list", "--json"]) == 0
    row = {r["name"]: r for r in _json(capsys)["models"]}["litemedsam"]
    assert (row["sha256"], row["size_bytes"], row["input_px"]) == (entry.sha256, entry.size, 256)
    assert row["here"] is installed and "box prompts only" in row["card"]["trained_on"]
    if installed:
        assert main(["models", "path", "litemedsam"]) == 0  # checked, then printed
        assert capsys.readouterr().out.strip().endswith("lite_medsam.pth")

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "distribution", missing)
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert (
        "\nlitemedsam " in out
        and ("litemedsam is not installed: pip install 'napari-segeval[litemedsam]'") in out
    )
    assert main(["models", "path", "litemedsam"]) == 2
    _one_line_error(capsys, "segeval models: error: ")
