"""``--series`` and ``--volume`` where the command line reads images; ``inspect`` on folders."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
import torch

from napari_segeval.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "io"))
from dicom_factory import pydicom_file, pydicom_series


@pytest.fixture
def folder(tmp_path):
    vol = np.arange(4 * 5 * 6, dtype=np.int16).reshape(4, 5, 6)
    pydicom_series(tmp_path / "pacs", vol, series_uid="1.2.3.1", SeriesDescription="ABDOMEN")
    pydicom_file(
        tmp_path / "pacs" / "s1.dcm",
        vol[0],
        series_uid="1.2.3.2",
        instance=1,
        iop=(0, 1, 0, 0, 0, -1),
        SeriesNumber=2,
    )
    pydicom_file(
        tmp_path / "pacs" / "s2.dcm",
        vol[0],
        series_uid="1.2.3.2",
        instance=2,
        iop=(1, 0, 0, 0, 0, -1),
        SeriesNumber=2,
    )
    return tmp_path / "pacs"


def test_inspect_folder_lists_every_series(folder, capsys):
    assert main(["inspect", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "series     3 here, described: 1.2.3.1" in out
    assert "* 1.2.3.1: CT, 4 images of 5 x 6, axial, series 1 'ABDOMEN'" in out
    assert "1.2.3.2#1: CT, 1 image of 5 x 6, sagittal" in out
    assert "1.2.3.2#2: CT, 1 image of 5 x 6, coronal" in out
    assert "mixes images of different orientation" in out
    assert main(["inspect", str(folder), "--series", "1.2.3.2#1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["series_id"] == "1.2.3.2#1" and payload["axes"] == "yx"
    assert [s["id"] for s in payload["series"]] == ["1.2.3.1", "1.2.3.2#1", "1.2.3.2#2"]
    assert payload["plane"]["origin"] == [0.0, 0.0, 0.0]


def test_inspect_bad_series_lists_then_one_line_error(folder, capsys):
    assert main(["inspect", str(folder), "--series", "1.2.3.2"]) == 2
    captured = capsys.readouterr()
    assert "1.2.3.2#2" in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "pick one of 1.2.3.2#1, 1.2.3.2#2" in err[0]


def test_inspect_warnings_and_nan(tmp_path, capsys):
    pydicom_file(tmp_path / "ps0.dcm", np.zeros((4, 5), np.int16), spacing=(0, 0))
    assert main(["inspect", str(tmp_path / "ps0.dcm")]) == 0
    out = capsys.readouterr().out
    assert "warning    PixelSpacing (0, 0) is not a positive pixel size" in out
    assert "(pixel units: no size in mm)" in out
    data = np.full((3, 4, 5), 7.0, np.float32)
    data[0] = np.nan
    nib.save(nib.Nifti1Image(data, np.eye(4)), tmp_path / "mni.nii.gz")
    assert main(["inspect", str(tmp_path / "mni.nii.gz"), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["nan_count"] == 20 and payload["intensity_range"] == [7.0, 7.0]


def test_inspect_colour_dicom_says_how_its_pixels_open(tmp_path, capsys):
    """Multi-frame RGB once ended in ``internal error: KeyError: 'zyxc'``."""
    frames = np.random.default_rng(0).integers(0, 256, (2, 4, 6, 3)).astype(np.uint8)
    pydicom_file(
        tmp_path / "sc.dcm",
        frames,
        SamplesPerPixel=3,
        modality="OT",
        iop=None,
        ipp=None,
        spacing=None,
    )
    assert main(["inspect", str(tmp_path / "sc.dcm")]) == 0
    out = capsys.readouterr().out
    assert "kind       video (tyxc)" in out and "shape      (2, 4, 6, 3)" in out
    assert "pixels     RGB, Explicit VR Little Endian" in out
    assert main(["inspect", str(tmp_path / "sc.dcm"), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["axes"] == "tyxc" and payload["pixels"] == "RGB, Explicit VR Little Endian"


def _4d(tmp_path):
    data = np.zeros((6, 5, 4, 3), np.float32)  # (X, Y, Z, T)
    labels = np.zeros((6, 5, 4, 3), np.uint8)
    labels[1:4, 1:4, 1:3, :] = 1
    labels[..., 2] = 0
    nib.save(nib.Nifti1Image(data, np.eye(4)), tmp_path / "cine.nii.gz")
    nib.save(nib.Nifti1Image(labels, np.eye(4)), tmp_path / "cine_seg.nii.gz")
    return tmp_path / "cine.nii.gz", tmp_path / "cine_seg.nii.gz"


def test_inspect_and_metrics_take_a_volume(tmp_path, capsys):
    image, seg = _4d(tmp_path)
    assert main(["inspect", str(image), "--volume", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shape"] == [4, 5, 6]
    assert main(["metrics", str(seg), str(seg)]) == 2
    assert "choose one volume with --volume T" in capsys.readouterr().err
    assert main(["metrics", str(seg), str(seg), "--volume", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["structures"][0]["dice"] == 1.0


def test_inspect_multichannel_volume_and_time_series(tmp_path, capsys):
    """A 4D file is a ``czyx`` volume when its dataset.json names its channels, else a series."""
    data = np.zeros((6, 5, 4, 2), np.float32)  # (X, Y, Z, C)
    data[..., 1] = 3.0
    task = tmp_path / "Task05_Prostate"
    (task / "imagesTr").mkdir(parents=True)
    (task / "labelsTr").mkdir()
    image = task / "imagesTr" / "prostate_00.nii.gz"
    labels = task / "labelsTr" / "prostate_00.nii.gz"
    nib.save(nib.Nifti1Image(data, np.eye(4)), image)
    nib.save(nib.Nifti1Image(np.ones((6, 5, 4), np.uint8), np.eye(4)), labels)
    assert main(["inspect", str(image), "--labels", str(labels), "--json"]) == 1
    series = json.loads(capsys.readouterr().out)  # no dataset.json yet: volumes over time
    assert (series["kind"], series["axes"], series["channels"]) == ("series", "tzyx", None)
    assert not series["aligned"]  # a 3D label map does not fit a 4D series
    (task / "dataset.json").write_text(
        json.dumps(
            {"modality": {"0": "T2", "1": "ADC"}, "labels": {"0": "background", "1": "prostate"}}
        )
    )
    assert main(["inspect", str(image), "--labels", str(labels), "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert (p["kind"], p["axes"], p["shape"], p["channels"]) == (
        "volume",
        "czyx",
        [2, 4, 5, 6],
        ["T2", "ADC"],
    )
    assert p["aligned"] and p["intensity_range"] == [0.0, 3.0]
    assert [(r["id"], r["name"]) for r in p["labels"]] == [(1, "prostate")]
    assert main(["inspect", str(image)]) == 0
    assert "kind       volume, 2 channels: T2, ADC (czyx)" in capsys.readouterr().out
    assert main(["inspect", str(image), "--volume", "1", "--json"]) == 0  # one volume asked
    assert json.loads(capsys.readouterr().out)["axes"] == "zyx"


def test_propagate_needs_a_volume_of_a_time_series(tmp_path, capsys):
    image, seg = _4d(tmp_path)
    out = tmp_path / "pred.nii.gz"
    argv = ["propagate", str(image), "--labels", str(seg), "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "time series of 3 volumes (t, z, y, x): choose one with --volume T (0..2)" in err
    torch.manual_seed(0)
    assert main([*argv, "--volume", "1", "--device", "cpu"]) == 0
    assert nib.load(out).shape == (6, 5, 4)


def test_series_option_reaches_the_reader(folder, tmp_path, capsys):
    out = tmp_path / "pred.nii.gz"
    argv = ["propagate", str(folder), "--series", "9.9", "--box", "0,0,0,3,3", "-o", str(out)]
    assert main(argv) == 2
    assert "no series 9.9 here" in capsys.readouterr().err


def test_inspect_names_unreadable_and_skipped_files(folder, capsys):
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian

    ds = Dataset()
    ds.SOPClassUID, ds.SOPInstanceUID, ds.Modality = "1.2.840.10008.5.1.4.1.1.88.11", "1.9", "SR"
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds.save_as(folder / "report.dcm", enforce_file_format=True)
    assert main(["inspect", str(folder)]) == 0
    assert (
        "skipped: report.dcm: DICOM SR is a structured report, not an image on a grid"
        in capsys.readouterr().out
    )
    (folder / "cut.dcm").write_bytes(b"\0" * 128 + b"DICM" + b"\xff" * 20)
    assert main(["inspect", str(folder)]) == 2
    captured = capsys.readouterr()
    assert "unreadable: " in captured.out and "cut.dcm" in captured.err
