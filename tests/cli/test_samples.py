"""``segeval samples``: where the sample files are, for a checkout and for a wheel user."""

from __future__ import annotations

import json

from napari_segeval.cli import main
from napari_segeval.phantoms.samples import ENV_VAR, sample_path, sample_root


def test_list_json_names_every_file(capsys):
    assert main(["samples", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["root"] == str(sample_root())
    rows = {r["name"]: r for r in payload["samples"]}
    assert rows["ct"]["image"] == str(sample_path("ct"))
    assert rows["ct"]["labels"] == str(sample_path("ct", "labels"))
    assert rows["ct"]["modality"] == "CT"
    assert rows["msd_task"]["folder"] == str(sample_path("msd_task"))


def test_list_table(capsys):
    assert main(["samples"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"samples in {sample_root()}")
    assert "ct/ct_001.nii.gz" in out and "segeval samples path NAME" in out


def test_path_prints_one_path(capsys):
    assert main(["samples", "path", "ct", "--part", "labels"]) == 0
    assert capsys.readouterr().out == f"{sample_path('ct', 'labels')}\n"
    assert main(["samples", "path", "skin", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "name": "skin",
        "part": "image",
        "path": str(sample_path("skin")),
    }


def test_unknown_sample_is_one_line(capsys):
    assert main(["samples", "path", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("segeval samples: error: no sample named 'nope'; available: ct")
    assert len(err.strip().splitlines()) == 1


def test_a_sample_without_its_extra_is_listed_as_not_here(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.png").write_bytes(b"")
    (tmp_path / "index.json").write_text(json.dumps({"ct": {"image": "a.png"}}))
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert main(["samples"]) == 0
    assert (
        "not here: video: the 'video' sample (an MP4, written with PyAV) needs the "
        "optional package 'av': pip install 'napari-segeval[video]'"
    ) in capsys.readouterr().out
    assert main(["samples", "path", "video"]) == 2
    assert "pip install 'napari-segeval[video]'" in capsys.readouterr().err
    assert main(["samples", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unavailable"][0]["name"] == "video"
