from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from napari_segeval.phantoms import SAMPLE_SEED_BASE, make_ct_case, make_echo_clip
from napari_segeval.phantoms.make_samples import OK_STATES, SEEDS, check_samples, main

ROOT = Path(__file__).resolve().parents[2] / "sample_data"


@pytest.fixture(scope="module")
def states():
    pytest.importorskip("av")
    return check_samples(ROOT)


@pytest.mark.slow
def test_committed_samples_match_the_generator(states):
    bad = {k: v for k, v in states.items() if v not in OK_STATES}
    assert not bad
    assert "index.json" in states and "ct/ct_001.nii.gz" in states


def test_check_reports_changed_missing_and_unexpected_files(tmp_path, monkeypatch):
    from napari_segeval.phantoms import make_samples
    from napari_segeval.phantoms._encode import png_bytes

    img = np.arange(12, dtype=np.uint8).reshape(3, 4)
    fake = {"a.txt": b"same", "b.png": png_bytes(img), "c.png": png_bytes(img), "d.txt": b"x"}
    monkeypatch.setattr(make_samples, "build_samples", lambda video=True: dict(fake))
    out = tmp_path / "s"
    assert main(["--out", str(out)]) == 0
    assert main(["--out", str(out), "--check"]) == 0
    from PIL import Image

    Image.fromarray(img).save(out / "b.png", compress_level=1)  # same pixels, other bytes
    (out / "c.png").write_bytes(png_bytes(img + 1))
    (out / "d.txt").unlink()
    (out / "extra.txt").write_text("x")
    got = check_samples(out)
    assert got == {
        "a.txt": "identical",
        "b.png": "same content",
        "c.png": "different",
        "d.txt": "missing",
        "extra.txt": "unexpected",
    }
    assert main(["--out", str(out), "--check"]) == 1


def test_seeds_are_held_out():
    assert all(seed >= SAMPLE_SEED_BASE for seed in SEEDS.values())


def test_index_entries_exist_on_disk():
    index = json.loads((ROOT / "index.json").read_text())
    for name in ("ct", "video", "echo_sequence", "polyp", "skin", "msd_task"):
        assert name in index
    for entry in index.values():
        parts = [entry] if isinstance(entry, str) else [entry["image"], entry["labels"]]
        for rel in parts:
            assert (ROOT / rel).exists(), rel
    assert index["polyp"]["color_table"] == {"1": [255, 0, 0], "2": [0, 255, 0]}


def test_msd_dataset_json():
    task = ROOT / json.loads((ROOT / "index.json").read_text())["msd_task"]
    ds = json.loads((task / "dataset.json").read_text())
    assert ds["modality"] == {"0": "CT"}
    assert ds["labels"]["0"] == "background" and ds["labels"]["5"] == "liver_tumour"
    assert ds["numTraining"] == len(ds["training"]) >= 6 and ds["test"] == []
    for item in ds["training"]:
        assert (task / item["image"]).is_file() and (task / item["label"]).is_file()


def test_ct_file_matches_generator_in_lps():
    import SimpleITK as sitk

    case = make_ct_case(SEEDS["ct"], tumour=True)
    img = sitk.ReadImage(str(ROOT / "ct" / "ct_001.nii.gz"))
    assert np.array_equal(sitk.GetArrayFromImage(img), case.image)
    np.testing.assert_allclose(img.GetSpacing(), case.spacing[::-1], rtol=1e-6)
    np.testing.assert_allclose(img.GetOrigin(), case.geometry.origin, atol=1e-4)
    lab = sitk.GetArrayFromImage(sitk.ReadImage(str(ROOT / "ct" / "ct_001_labels.nii.gz")))
    assert np.array_equal(lab, case.labels)


def test_echo_sequence_matches_generator():
    import SimpleITK as sitk

    clip = make_echo_clip(SEEDS["echo"])
    img = sitk.ReadImage(str(ROOT / "video" / "echo_001_sequence.mhd"))
    assert np.array_equal(sitk.GetArrayFromImage(img), clip.image)
    np.testing.assert_allclose(img.GetSpacing(), clip.spacing[::-1])
    gt = sitk.ReadImage(str(ROOT / "video" / "echo_001_sequence_gt.mhd"))
    assert np.array_equal(sitk.GetArrayFromImage(gt), clip.labels)


def test_total_size_is_small():
    total = sum(p.stat().st_size for p in ROOT.rglob("*") if p.is_file())
    assert total < 5_000_000
