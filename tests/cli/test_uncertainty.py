"""``segeval uncertainty score`` and ``segeval uncertainty filter``."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "evaluation"))

from _segeval_toy import write_msd

from napari_segeval.cli import main


def score(tmp_path, capsys, n=6, extra=()):
    task = write_msd(tmp_path / "Task93", n, extra_training=extra)
    out = tmp_path / "auv.json"
    rc = main(
        [
            "uncertainty",
            "score",
            str(task),
            "--model",
            "threshold",
            "--threads",
            "1",
            "-o",
            str(out),
            "--json",
        ]
    )
    return task, out, rc, json.loads(capsys.readouterr().out)


def test_score_writes_json_and_csv_and_prints_one_object(tmp_path, capsys):
    task, out, rc, payload = score(tmp_path, capsys)
    assert rc == 0
    assert payload["model"]["name"] == "threshold" and len(payload["cases"]) == 6
    assert sorted(payload["written"]) == sorted([str(out), str(out.with_suffix(".csv"))])
    saved = json.loads(out.read_text())
    assert saved["format"] == "napari-segeval-auv/1" and saved["cases"] == payload["cases"]
    auvs = sorted(c["auv"] for c in saved["cases"])
    assert auvs[0] == 0.0 and auvs[-1] == 1.0
    with open(out.with_suffix(".csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6 * 2 and {r["structure"] for r in rows} == {"cube", "ball"}
    first = saved["cases"][0]
    assert float(rows[0]["case_auv"]) == pytest.approx(first["auv"])
    # the table, and no silent overwrite
    rc = main(
        ["uncertainty", "score", str(task), "--model", "threshold", "-o", str(out), "--no-progress"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "exists; pass --overwrite" in err and err.count("\n") == 1
    rc = main(["uncertainty", "score", str(task), "--model", "threshold", "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 0 and "lowest-scale class" in text and "AUV of 6 cases" in text


def test_score_reports_unreadable_cases_with_exit_3(tmp_path, capsys):
    extra = [{"image": "./imagesTr/gone.nii.gz", "label": "./labelsTr/gone.nii.gz"}]
    _, _, rc, payload = score(tmp_path, capsys, n=3, extra=extra)
    assert rc == 3
    gone = next(c for c in payload["cases"] if c["case"] == "gone")
    assert "no such file" in gone["error"] and gone["auv"] is None


def test_filter_writes_nnunet_splits_and_dataset_json(tmp_path, capsys):
    task, out, _, payload = score(tmp_path, capsys, n=10)
    ranked = sorted(payload["cases"], key=lambda c: -c["auv"])
    rc = main(
        [
            "uncertainty",
            "filter",
            str(out),
            "--remove",
            "0.1",
            "--dataset",
            str(task),
            "-o",
            str(tmp_path / "f"),
            "--json",
        ]
    )
    summary = json.loads(capsys.readouterr().out)
    assert rc == 0 and summary["n_removed"] == 1 and summary["rule"] == "quantile"
    worst = ranked[0]["case"]
    assert [r["case"] for r in summary["removed"]] == [worst]
    splits = json.loads((tmp_path / "f" / "splits_final.json").read_text())
    assert len(splits) == 5 and all(worst not in f["train"] for f in splits)
    assert sum(worst in f["val"] for f in splits) == 1  # validation lists untouched
    ds = json.loads((tmp_path / "f" / "dataset.json").read_text())
    assert ds["numTraining"] == 9 and all(worst not in e["image"] for e in ds["training"])
    removed = json.loads((tmp_path / "f" / "removed.json").read_text())
    assert removed["removed"][0]["case"] == worst
    # the data set's own splits are filtered when given; the CSV reads too
    mine = [{"train": [c["case"] for c in ranked[:6]], "val": [c["case"] for c in ranked[6:]]}]
    (tmp_path / "splits.json").write_text(json.dumps(mine))
    rc = main(
        [
            "uncertainty",
            "filter",
            str(out.with_suffix(".csv")),
            "--remove",
            "0.2",
            "--rule",
            "round",
            "--splits",
            str(tmp_path / "splits.json"),
            "-o",
            str(tmp_path / "g"),
        ]
    )
    text = capsys.readouterr().out
    assert rc == 0 and "removed 2 of 10 cases (round rule" in text
    got = json.loads((tmp_path / "g" / "splits_final.json").read_text())
    assert got == [{"train": [c["case"] for c in ranked[2:6]], "val": mine[0]["val"]}]
    assert not (tmp_path / "g" / "dataset.json").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--remove", "1.5"], "--remove must be a fraction"),
        (["--remove", "0.1", "--splits", "/no/such.json"], "no such splits file"),
        (["--remove", "0.1", "--dataset", "/no/such/folder"], "data-set folder not found"),
    ],
)
def test_filter_bad_input_is_one_line(tmp_path, capsys, argv, message):
    scores = tmp_path / "s.json"
    scores.write_text(
        json.dumps(
            {
                "format": "napari-segeval-auv/1",
                "cases": [{"case": f"c{i}", "auv": i / 9} for i in range(10)],
            }
        )
    )
    rc = main(["uncertainty", "filter", str(scores), "-o", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        (
            "s.json",
            '{"format": "napari-segeval-auv/1", "cases": "x"}',
            'not a scores file of segeval uncertainty score ("cases" must be a list of '
            '{"case": ID, "auv": NUMBER or null})',
        ),
        (
            "s.json",
            '{"format": "napari-segeval-auv/1", "cases": [{"auv": 0.5}]}',
            'not a scores file of segeval uncertainty score ("cases" must be a list of '
            '{"case": ID, "auv": NUMBER or null})',
        ),
        (
            "s.json",
            '{"format": "napari-segeval-auv/1", "cases": [{"case": "a", "auv": "x"}]}',
            "case a: auv 'x' is not a number",
        ),
        ("s.csv", "case,case_auv\na,0.5\nb,abc\n", "case b: case_auv 'abc' is not a number"),
    ],
)
def test_malformed_scores_are_one_line(tmp_path, capsys, name, text, problem):
    scores = tmp_path / name
    scores.write_text(text)
    rc = main(
        [
            "uncertainty",
            "filter",
            str(scores),
            "--remove",
            "0.1",
            "-o",
            str(tmp_path / "o"),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and not (tmp_path / "o").exists()
    assert captured.err == f"segeval uncertainty: error: {scores}: {problem}\n"


@pytest.mark.parametrize(
    ("where", "reason"), [("a_file", "File exists"), ("a_file/sub", "Not a directory")]
)
def test_filter_output_that_cannot_be_made_is_one_line(tmp_path, capsys, where, reason):
    scores = tmp_path / "s.json"
    scores.write_text(
        json.dumps(
            {
                "format": "napari-segeval-auv/1",
                "cases": [{"case": f"c{i}", "auv": i / 9} for i in range(10)],
            }
        )
    )
    (tmp_path / "a_file").write_text("x")
    rc = main(
        [
            "uncertainty",
            "filter",
            str(scores),
            "--remove",
            "0.1",
            "-o",
            str(tmp_path / where),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and (tmp_path / "a_file").read_text() == "x"
    assert captured.err == (
        f"segeval uncertainty: error: {tmp_path / where}: cannot create the "
        f"output folder ({reason})\n"
    )


def test_scores_file_errors(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    assert main(["uncertainty", "filter", str(bad), "--remove", "0.1", "-o", str(tmp_path)]) == 2
    assert "not a scores file" in capsys.readouterr().err
    assert main(["uncertainty", "score", str(tmp_path), "-o", str(tmp_path / "a.txt")]) == 2
    assert "must end in .json or .csv" in capsys.readouterr().err
    assert main(["uncertainty"]) == 2


@pytest.mark.parametrize("power", ["-1", "0", "nan", "inf"])
def test_score_refuses_an_energy_power_that_is_not_positive(tmp_path, capsys, power):
    task = write_msd(tmp_path / "Task93", 2)
    out = tmp_path / "auv.json"
    rc = main(
        [
            "uncertainty",
            "score",
            str(task),
            "--model",
            "threshold",
            "--energy-power",
            power,
            "-o",
            str(out),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and not out.exists()
    assert captured.err == (
        "segeval uncertainty: error: --energy-power must be a positive "
        f"number, got {float(power):g}\n"
    )
