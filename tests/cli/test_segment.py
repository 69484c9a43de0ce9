import argparse
import json
import shutil
from pathlib import Path

import pytest
import torch

from napari_segeval._errors import SegEvalError, WriteError
from napari_segeval.cli import _segment
from napari_segeval.io import read_labels


def _parse(argv):
    parser = argparse.ArgumentParser()
    _segment.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["segment", *argv])


@pytest.fixture
def files(tiny_ct_files, tiny_dense_weights):
    d, geom, img = tiny_ct_files
    shutil.copy(tiny_dense_weights, d / "tiny.pt")  # the session's weights beside the case
    return d, geom, img.shape


def test_segment_writes_source_geometry_and_json(files, capsys):
    d, geom, shape = files
    args = _parse(
        [
            str(d / "ct.nii.gz"),
            "--model",
            str(d / "tiny.pt"),
            "--output",
            str(d / "pred.nii.gz"),
            "--labels",
            str(d / "seg.nii.gz"),
            "--json",
            "--device",
            "cpu",
        ]
    )
    assert _segment.run(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["output"] == str(d / "pred.nii.gz")
    assert [r["name"] for r in payload["structures"]][:2] == ["liver", "spleen"]
    assert set(payload["structures"][0]) >= {"label", "dice", "hd95", "nsd", "volume_ref_ml"}
    pred, pgeom, _ = read_labels(d / "pred.nii.gz")
    assert pred.shape == shape and pgeom.matches(geom)


def test_segment_table_refusals(files, capsys):
    d, _, _ = files
    out = d / "p.nii.gz"
    base = [
        str(d / "ct.nii.gz"),
        "--model",
        str(d / "tiny.pt"),
        "--output",
        str(out),
        "--device",
        "cpu",
    ]
    assert _segment.run(_parse(base)) == 0
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(WriteError, match="exists"):
        _segment.run(_parse(base))
    with pytest.raises(SegEvalError, match="overlap"):
        _segment.run(_parse([*base, "--overwrite", "--overlap", "1.5"]))
    with pytest.raises(SegEvalError, match="trust"):
        ts = d / "m.ts"
        torch.jit.trace(torch.nn.Conv3d(1, 2, 1), torch.zeros(1, 1, 2, 2, 2)).save(str(ts))
        _segment.run(_parse([*base[:1], "--model", str(ts), "--output", str(d / "q.nii.gz")]))


@pytest.mark.parametrize("value", ["-2", "0", "nan"])
def test_bad_tolerance_is_one_line_before_the_model_runs(files, capsys, value):
    from napari_segeval.cli import main

    d, _, _ = files
    out = d / "p.nii.gz"
    rc = main(
        [
            "segment",
            str(d / "ct.nii.gz"),
            "--model",
            str(d / "tiny.pt"),
            "--labels",
            str(d / "seg.nii.gz"),
            "--output",
            str(out),
            "--device",
            "cpu",
            "--tolerance",
            value,
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and not out.exists()
    assert captured.err == (
        f"segeval segment: error: --tolerance must be a positive number of mm, got {float(value)}\n"
    )


def test_a_factory_model_segments_the_case_itself(files, capsys, monkeypatch):
    """A ``module:factory`` model (a DenseBackend: no plans, no window) runs its segment()."""
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "evaluation"))
    d, geom, shape = files
    args = [str(d / "ct.nii.gz"), "--model", "_segeval_toy:ThresholdDense", "--json"]
    assert _segment.run(_parse([*args, "--output", str(d / "toy.nii.gz")])) == 0
    assert json.loads(capsys.readouterr().out)["output"] == str(d / "toy.nii.gz")
    pred, pgeom, _ = read_labels(d / "toy.nii.gz")
    assert pred.shape == shape and pgeom.matches(geom) and set(pred.ravel()) <= {0, 1, 2}
