"""``segeval metrics``: one definition of a structure row, JSON keys and text columns."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from napari_segeval.cli import main
from napari_segeval.io import Geometry, write_labels
from napari_segeval.metrics import ROW_KEYS, structure_table

#: The keys ``segeval metrics --json`` wrote before ROW_KEYS had one definition.
KEYS_BEFORE = (
    "label",
    "name",
    "dice",
    "iou",
    "precision",
    "recall",
    "hd95",
    "assd",
    "nsd",
    "volume_ref_ml",
    "volume_pred_ml",
)


@pytest.fixture
def pair(tmp_path):
    ref = np.zeros((8, 20, 20), np.uint8)
    ref[2:6, 4:12, 4:12] = 1
    ref[2:6, 12:18, 5:15] = 2
    pred = np.roll(ref, 1, axis=2)
    pred[0, 0, :3] = 3  # a structure only in the prediction
    g = Geometry.identity(3, (2.0, 0.75, 0.75))
    paths = (
        write_labels(tmp_path / "ref.nii.gz", ref, g),
        write_labels(tmp_path / "pred.nii.gz", pred, g),
    )
    return paths, ref, pred, g


def test_json_rows_are_the_metrics_rows(pair, capsys):
    (r, p), ref, pred, g = pair
    assert main(["metrics", str(r), str(p), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["structures"]
    expected = structure_table(ref, pred, g.spacing)
    assert [r["label"] for r in rows] == [1, 2, 3]
    for got, want in zip(rows, expected):
        assert tuple(got) == ROW_KEYS and set(got) >= set(KEYS_BEFORE)
        for key in ROW_KEYS:
            if isinstance(want[key], float) and np.isinf(want[key]):
                assert got[key] == "inf"
            else:
                assert got[key] == want[key]


def test_text_table_columns(pair, capsys):
    (r, p), *_ = pair
    assert main(["metrics", str(r), str(p)]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header == [
        "label",
        "name",
        "dice",
        "iou",
        "prec",
        "recall",
        "hd95_mm",
        "assd_mm",
        "nsd",
        "ref_ml",
        "pred_ml",
    ]


def test_parser_does_not_import_the_metrics_package():
    code = (
        "import sys; from napari_segeval.cli import build_parser; build_parser(); "
        "assert 'napari_segeval.metrics' not in sys.modules, 'imported at start'"
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_a_label_id_above_the_metrics_limit_is_one_line_naming_the_file(pair, tmp_path, capsys):
    (ref_path, _), ref, _, g = pair
    big = ref.astype(np.uint16)
    big[1, 1, 1] = 5000
    big_path = write_labels(tmp_path / "big.nii.gz", big, g)
    rc = main(["metrics", str(ref_path), str(big_path), "--json"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err == (
        f"segeval metrics: error: {big_path}: label id 5000 is above the "
        "largest id the metrics take (4095)\n"
    )


def test_labels_a_dataset_json_does_not_name_are_reported_as_label_n(pair, tmp_path, capsys):
    (ref_path, pred_path), _, _, _ = pair
    (tmp_path / "dataset.json").write_text('{"labels": {"0": "background", "1": "liver"}}')
    assert main(["metrics", str(ref_path), str(pred_path), "--no-surface", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["structures"]
    assert [(r["label"], r["name"]) for r in rows] == [(1, "liver"), (2, "label 2"), (3, "label 3")]
