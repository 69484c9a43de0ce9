"""``segeval triage``: the worklist as a table or one JSON object; one line for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from napari_segeval.cli import main

TASK = Path(__file__).resolve().parents[2] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"


def test_the_table_lists_the_riskiest_structures_first(risk_run, capsys):
    assert main(["triage", str(risk_run), "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:6] == ["case", "structure", "model", "condition", "risk", "dice"]
    assert len(lines) == 4  # header, rule, two rows


def test_json_is_one_object_with_every_flagged_slice(risk_run, capsys):
    assert main(["triage", str(risk_run), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["n_items"] == len(payload["worklist"]) == 5
    risks = [w["risk"] for w in payload["worklist"]]
    assert risks == sorted(risks, reverse=True)
    for w in payload["worklist"]:
        assert all(isinstance(f["slice"], int) and f["why"] for f in w["flagged"])


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--top", "0"], "--top must be at least 1"), ([], "no results.csv")],
)
def test_bad_input_is_one_line(tmp_path, capsys, args, message):
    assert main(["triage", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_evaluate_takes_prompts_files_and_says_there_is_no_reference(tmp_path, capsys):
    """``segeval evaluate --prompts DIR`` on a folder of images without labels."""
    import shutil

    import numpy as np

    from napari_segeval.evaluation.protocols._promptable import prompt_sets, reference_prompts
    from napari_segeval.io import read_case
    from napari_segeval.prompts.prompt_file import PromptFile, write_prompts

    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(TASK / "imagesTr/abd_002.nii.gz", data)
    case = read_case(TASK / "imagesTr/abd_002.nii.gz", labels=TASK / "labelsTr/abd_002.nii.gz")
    boxes = reference_prompts(case.labels, case.structures, jitter=0, rng=np.random.default_rng(0))
    (tmp_path / "p").mkdir()
    pf = PromptFile(prompt_sets(boxes[:2], case.labels, "box"), case.labels.shape, case.structures)
    write_prompts(tmp_path / "p" / "abd_002.prompts.json", pf)
    out = tmp_path / "out"
    argv = ["evaluate", str(data), "--layout", "generic", "--images", "*.nii.gz"]
    argv += ["--protocol", "medsam2-3d", "--prompts", str(tmp_path / "p")]
    assert main([*argv, "-o", str(out), "--no-progress", "--no-report"]) == 0
    text = capsys.readouterr().out
    assert "no reference labels: 2 structures, none scored" in text
    assert main(["triage", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_items"] == 2
