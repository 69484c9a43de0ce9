"""``segeval propagate`` through its parser (the lead registers it in SUBCOMMANDS)."""

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from napari_segeval._errors import SegEvalError, WriteError
from napari_segeval.cli import _propagate
from napari_segeval.io import read_labels, write_image, write_labels
from napari_segeval.io.case import Geometry
from napari_segeval.models._prompt_net import PromptUNet
from napari_segeval.models.builtin_prompt import save_weights


def _run(argv):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    _propagate.add_parser(sub)
    args = p.parse_args(["propagate", *argv])
    return args.func(args)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("prop")
    torch.manual_seed(0)
    save_weights(
        PromptUNet(width=4, depth=2).eval(), d / "w.pt", {"width": 4, "depth": 2, "size": 16}
    )
    img = np.full((7, 24, 20), -100, np.int16)
    lab = np.zeros((7, 24, 20), np.uint8)
    lab[1:6, 5:15, 4:12] = 1
    lab[2:5, 17:22, 14:18] = 2
    img[lab > 0] = 80
    geom = Geometry((2.0, 0.8, 0.7), (1.0, 2.0, 3.0), tuple(np.eye(3).ravel()))
    write_image(d / "img.nii.gz", img, geom)
    write_labels(d / "lab.nii.gz", lab, geom)
    return d, geom


def test_boxes_from_reference_write_prediction_with_geometry(files, capsys):
    d, geom = files
    out = d / "pred.nii.gz"
    rc = _run(
        [
            str(d / "img.nii.gz"),
            "--labels",
            str(d / "lab.nii.gz"),
            "--checkpoint",
            str(d / "w.pt"),
            "--device",
            "cpu",
            "-o",
            str(out),
            "--json",
        ]
    )
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["output"] == str(out)
    assert [r["label"] for r in payload["structures"]] == [1, 2]
    assert all(0 <= r["dice"] <= 1 for r in payload["structures"])
    pred, pgeom, _ = read_labels(out)
    assert pred.shape == (7, 24, 20) and pgeom.matches(geom)
    with pytest.raises(WriteError, match="--overwrite"):
        _run(
            [
                str(d / "img.nii.gz"),
                "--box",
                "3,5,4,15,12",
                "--checkpoint",
                str(d / "w.pt"),
                "-o",
                str(out),
            ]
        )


def test_explicit_box_without_reference(files, capsys):
    d, _ = files
    out = d / "pred_box.nii.gz"
    rc = _run(
        [
            str(d / "img.nii.gz"),
            "--box",
            "3,5,4,15,12,4",
            "--checkpoint",
            str(d / "w.pt"),
            "--device",
            "cpu",
            "-o",
            str(out),
            "--no-largest",
        ]
    )
    assert rc == 0 and "slice 3" in capsys.readouterr().out
    pred, _, _ = read_labels(out)
    assert set(np.unique(pred)) <= {0, 4}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--box", "9,1,1,4,4"], "outside"),
        (["--box", "1,5,5,2,9"], "y0 < y1"),
        (["--box", "1,2,3"], "z,y0,x0,y1,x1"),
        (["--structure", "spleen"], "needs --labels"),
        ([], "--box"),
        (["--model", "medsam2"], "--checkpoint"),
    ],
)
def test_bad_arguments_are_clear_errors(files, argv, message):
    d, _ = files
    if argv[:1] == ["--model"]:
        argv = [*argv, "--box", "3,5,4,15,12"]
    with pytest.raises(SegEvalError, match=message):
        _run([str(d / "img.nii.gz"), *argv, "-o", str(d / "never.nii.gz")])
    assert not (d / "never.nii.gz").exists()


def test_every_name_inspect_prints_is_accepted_as_structure(files, capsys):
    """``segeval inspect`` names unnamed labels ``label 1``, ...; propagate takes them and ids."""
    from napari_segeval.cli import main

    d, _ = files
    assert (
        main(["inspect", str(d / "img.nii.gz"), "--labels", str(d / "lab.nii.gz"), "--json"]) == 0
    )
    shown = [(r["id"], r["name"]) for r in json.loads(capsys.readouterr().out)["labels"]]
    assert shown[1:] == [(1, "label 1"), (2, "label 2")]
    for label, name in shown[1:]:
        for token in (name, name.upper(), str(label)):
            out = d / f"pred_{label}_{token.replace(' ', '_')}.nii.gz"
            rc = _run(
                [
                    str(d / "img.nii.gz"),
                    "--labels",
                    str(d / "lab.nii.gz"),
                    "--structure",
                    token,
                    "--checkpoint",
                    str(d / "w.pt"),
                    "--device",
                    "cpu",
                    "-o",
                    str(out),
                    "--json",
                ]
            )
            assert rc == 0
            payload = json.loads(capsys.readouterr().out)
            assert [(r["label"], r["name"]) for r in payload["structures"]] == [(label, name)]
            pred, _, _ = read_labels(out)
            assert set(np.unique(pred)) <= {0, label}


@pytest.mark.parametrize(
    "token, message",
    [
        (
            "label 3",
            r"'label 3' \(id 3\) is not in the label map \(structures: 1 label 1, 2 label 2\)",
        ),
        ("background", "background, not a structure"),
        ("liver", "unknown structure 'liver'"),
    ],
)
def test_unknown_structure_is_one_line_error(files, capsys, token, message):
    from napari_segeval.cli import main

    d, _ = files
    out = d / "never_struct.nii.gz"
    rc = main(
        [
            "propagate",
            str(d / "img.nii.gz"),
            "--labels",
            str(d / "lab.nii.gz"),
            "--structure",
            token,
            "--checkpoint",
            str(d / "w.pt"),
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert re.search(message, err) and str(d / "lab.nii.gz") in err
    assert not out.exists()


def test_modality_stop_when_empty_and_connectivity_options(files, capsys):
    d, _ = files
    common = [
        str(d / "img.nii.gz"),
        "--labels",
        str(d / "lab.nii.gz"),
        "--checkpoint",
        str(d / "w.pt"),
        "--device",
        "cpu",
        "--json",
        "--overwrite",
    ]
    assert _run([*common, "-o", str(d / "a.nii.gz")]) == 0
    guessed = json.loads(capsys.readouterr().out)
    assert guessed["modality"] == "other"  # int16 without air: not recognised as CT
    assert (
        _run(
            [
                *common,
                "-o",
                str(d / "b.nii.gz"),
                "--modality",
                "CT",
                "--ct-mapping",
                "minmax",
                "--no-stop-when-empty",
                "--connectivity",
                "26",
            ]
        )
        == 0
    )
    told = json.loads(capsys.readouterr().out)
    assert told["modality"] == "CT"
    assert _run([*common[:-2], "-o", str(d / "c.nii.gz"), "--modality", "CT"]) == 0
    text = capsys.readouterr().out
    assert "modality CT, stop when empty" in text
    with pytest.raises(SystemExit):
        _run([*common, "-o", str(d / "d.nii.gz"), "--modality", "XR"])


def test_threshold_model_runs_and_unnamed_structures_match_metrics(files, capsys):
    """Every promptable name ``segeval info`` lists is taken; one spelling of "label N"."""
    from napari_segeval.cli import main

    d, _ = files
    out = d / "pred_threshold.nii.gz"
    rc = main(
        [
            "propagate",
            str(d / "img.nii.gz"),
            "--labels",
            str(d / "lab.nii.gz"),
            "--model",
            "threshold",
            "--modality",
            "CT",
            "-o",
            str(out),
            "--overwrite",
            "--json",
        ]
    )
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in payload["structures"]] == ["label 1", "label 2"]
    assert min(r["dice"] for r in payload["structures"]) > 0.5
    assert main(["metrics", str(d / "lab.nii.gz"), str(out), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["structures"]
    assert [r["name"] for r in rows] == ["label 1", "label 2"]
    assert main(["info", "--json"]) == 0
    from napari_segeval.models.registry import FORMS

    listed = [
        m["name"]
        for m in json.loads(capsys.readouterr().out)["models"]
        if m["kind"] == "promptable" and m["name"] not in FORMS["promptable"]
    ]
    assert "threshold" in listed
    for name in listed:  # parsed, not run (medsam2 needs a checkpoint file)
        p = argparse.ArgumentParser()
        _propagate.add_parser(p.add_subparsers(dest="command"))
        assert (
            p.parse_args(["propagate", "x.nii.gz", "-o", "y.nii.gz", "--model", name]).model == name
        )


def test_dense_model_is_refused_when_parsing(capsys):
    from napari_segeval.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["propagate", "x.nii.gz", "-o", "y.nii.gz", "--model", "builtin-ct"])
    assert exc.value.code == 2
    assert "'builtin-ct' is a dense model or a file: a dense model segments without prompts" in (
        capsys.readouterr().err
    )


def test_unknown_model_is_refused_when_parsing(capsys):
    from napari_segeval.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["propagate", "x.nii.gz", "-o", "y.nii.gz", "--model", "sam9"])
    assert exc.value.code == 2
    assert "unknown model 'sam9' (use one of builtin, threshold, litemedsam, medsam2" in (
        capsys.readouterr().err
    )


SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def _json_out(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_multi_prompt_ct_sample_writes_prompts_and_replays(tmp_path, capsys):
    """Boxes on two slices, clicks on others (threshold model: it takes points)."""
    from napari_segeval.prompts.prompt_file import read_prompts
    from napari_segeval.prompts.prompt_set import Box, Point

    ct = SAMPLES / "ct"
    out = tmp_path / "pred.nii.gz"
    argv = [
        str(ct / "ct_001.nii.gz"),
        "--labels",
        str(ct / "ct_001_labels.nii.gz"),
        "--model",
        "threshold",
        "--box",
        "20,37,23,73,67,1",
        "--point",
        "30,60,40",
        "--box",
        "30,54,71,76,89,2",
        "--point",
        "35,65,78,-",
        "--box",
        "14,37,23,73,67,1",
        "--json",
    ]
    assert _run([*argv, "-o", str(out)]) == 0
    payload = _json_out(capsys)
    saved = tmp_path / "pred.prompts.json"
    assert payload["prompts"] == str(saved) and [r["label"] for r in payload["structures"]] == [
        1,
        2,
    ]
    pf = read_prompts(saved)
    assert pf.shape == (40, 112, 112) and pf.names == {1: "liver", 2: "spleen"}
    assert pf.sets[1].prompts == (
        Box(37, 23, 73, 67, index=20),
        Point(60, 40, index=30),
        Box(37, 23, 73, 67, index=14),
    )  # command-line order
    assert pf.sets[2].prompts == (
        Box(54, 71, 76, 89, index=30, label=2),
        Point(65, 78, index=35, label=2, positive=False),
    )
    replay = tmp_path / "again.nii.gz"
    assert (
        _run(
            [
                str(ct / "ct_001.nii.gz"),
                "--model",
                "threshold",
                "--prompts",
                str(saved),
                "-o",
                str(replay),
                "--json",
            ]
        )
        == 0
    )
    assert _json_out(capsys)["prompts"] == str(tmp_path / "again.prompts.json")
    np.testing.assert_array_equal(read_labels(replay)[0], read_labels(out)[0])
    assert read_prompts(tmp_path / "again.prompts.json") == pf
    out.unlink()
    with pytest.raises(WriteError, match="pred.prompts.json exists"):  # the same overwrite rule
        _run([*argv, "-o", str(out)])
    assert not out.exists()
    assert _run([*argv, "-o", str(out), "--overwrite"]) == 0


def test_multi_prompt_video_and_2d_image(tmp_path, capsys):
    video = SAMPLES / "video"
    out = tmp_path / "echo.nii.gz"
    assert (
        _run(
            [
                str(video / "echo_001_sequence.mhd"),
                "--labels",
                str(video / "echo_001_sequence_gt.mhd"),
                "--model",
                "threshold",
                "--box",
                "3,19,48,66,73,1",
                "--point",
                "12,40,60,-",
                "--box",
                "12,19,48,66,73,1",
                "-o",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    payload = _json_out(capsys)
    pred = read_labels(out)[0]
    assert pred.shape == (24, 112, 112) and not pred[:3].any() and pred[3:].any()
    assert [r["label"] for r in payload["structures"]] == [1]
    skin = SAMPLES / "skin"
    png = tmp_path / "skin.png"
    assert (
        _run(
            [
                str(skin / "skin_001.png"),
                "--labels",
                str(skin / "skin_001_segmentation.png"),
                "--model",
                "threshold",
                "--point",
                "0,73,84",
                "--point",
                "0,45,56,-",
                "-o",
                str(png),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "+ point (y=73, x=84)" in text and "- point (y=45, x=56)" in text
    from napari_segeval.prompts.prompt_file import read_prompts

    assert read_prompts(tmp_path / "skin.prompts.json").shape == (1, 128, 160)


def test_builtin_weights_without_clicks_refuse_points(files):
    d, _ = files
    from napari_segeval._errors import InvalidPromptError

    with pytest.raises(
        InvalidPromptError, match=r"not points: the weights .*w\.pt have no click channels"
    ):
        _run(
            [
                str(d / "img.nii.gz"),
                "--box",
                "3,5,4,15,12",
                "--point",
                "3,8,8,-",
                "--checkpoint",
                str(d / "w.pt"),
                "--device",
                "cpu",
                "-o",
                str(d / "never_pt.nii.gz"),
            ]
        )
    assert not (d / "never_pt.nii.gz").exists() and not (d / "never_pt.prompts.json").exists()


def _prompts_file(path, shape, structures):
    path.write_text(
        json.dumps({"format": "napari-segeval/prompts/1", "shape": shape, "structures": structures})
    )
    return path


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--point", "3,30,8"], "outside the 24 x 20"),
        (["--point", "7,3,3"], "slice/frame 7 outside 0..6"),
        (["--point", "3,3"], "expected z,y,x"),
        (["--point", "3,5,5,-"], "only negative points"),
        (["--prompts", "{tmp}/bad.json"], "malformed prompts file"),
        (
            ["--prompts", "{tmp}/shape.json"],
            r"image of shape \[7, 30, 20\], this one is \[7, 24, 20\]",
        ),
        (["--prompts", "{tmp}/unknown.json"], "unknown structure 9"),
        (["--prompts", "{tmp}/mask.json"], "has shape 2 x 2, the slices are 24 x 20"),
        (["--prompts", "{tmp}/none.json"], "no such prompts file"),
    ],
)
def test_bad_prompts_are_one_line_and_write_nothing(files, tmp_path, capsys, argv, message):
    from napari_segeval.cli import main

    d, _ = files
    box = {"type": "box", "index": 3, "y0": 5, "x0": 4, "y1": 15, "x1": 12}
    _prompts_file(tmp_path / "bad.json", [7, 24, 20], [{"label": 1, "prompts": [{"type": "box"}]}])
    _prompts_file(tmp_path / "shape.json", [7, 30, 20], [{"label": 1, "prompts": [box]}])
    _prompts_file(tmp_path / "unknown.json", [7, 24, 20], [{"label": 9, "prompts": [box]}])
    _prompts_file(
        tmp_path / "mask.json",
        [7, 24, 20],
        [
            {
                "label": 1,
                "prompts": [
                    {"type": "mask", "index": 2, "rle": {"size": [2, 2], "counts": [1, 3]}}
                ],
            }
        ],
    )
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    out = tmp_path / "never.nii.gz"
    model = [] if "--model" in argv else ["--model", "threshold"]
    rc = main(
        [
            "propagate",
            str(d / "img.nii.gz"),
            "--labels",
            str(d / "lab.nii.gz"),
            *model,
            *argv,
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1 and re.search(message, err), err
    assert not out.exists() and not (tmp_path / "never.prompts.json").exists()


def test_labels_the_dataset_json_does_not_name_are_segmented_as_label_n(files, tmp_path, capsys):
    import shutil

    d, _ = files
    for name in ("img.nii.gz", "lab.nii.gz"):
        shutil.copy(d / name, tmp_path / name)
    (tmp_path / "dataset.json").write_text('{"labels": {"0": "background", "1": "liver"}}')
    rc = _run(
        [
            str(tmp_path / "img.nii.gz"),
            "--labels",
            str(tmp_path / "lab.nii.gz"),
            "--model",
            "threshold",
            "-o",
            str(tmp_path / "p.nii.gz"),
            "--json",
        ]
    )
    rows = json.loads(capsys.readouterr().out)["structures"]
    assert rc == 0 and [(r["label"], r["name"]) for r in rows] == [(1, "liver"), (2, "label 2")]


def test_a_precision_this_machine_cannot_run_is_one_line_and_runs_nothing(
    files, tmp_path, capsys, monkeypatch
):
    from napari_segeval.cli import main
    from napari_segeval.models import precision
    from napari_segeval.models.litemedsam._asset import installed_version

    if installed_version() is None:
        pytest.skip("the litemedsam extra is not installed")
    monkeypatch.setattr(precision, "bf16_reason", lambda device=None: "no bf16 here (test)")
    d, _ = files
    out = tmp_path / "never.nii.gz"
    argv = ["propagate", str(d / "img.nii.gz"), "--labels", str(d / "lab.nii.gz")]
    for model in ("litemedsam", "builtin"):
        rc = main(
            [*argv, "--model", model, "--device", "cpu", "--precision", "bf16", "-o", str(out)]
        )
        err = capsys.readouterr().err
        assert rc != 0 and not out.exists()
        assert len(err.strip().splitlines()) == 1
        reason = "no bf16 here (test)" if model == "litemedsam" else "builtin runs in fp32 only"
        assert f"--precision bf16: {reason}; --precision auto chooses fp32" in err
