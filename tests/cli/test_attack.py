import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from napari_segeval._errors import SegEvalError, WriteError
from napari_segeval.cli import _attack
from napari_segeval.io import read_image, read_labels

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def _parse(argv):
    parser = argparse.ArgumentParser()
    _attack.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["attack", *argv])


@pytest.fixture
def files(tiny_ct_files, tiny_dense_weights):
    d, geom, img = tiny_ct_files
    shutil.copy(tiny_dense_weights, d / "tiny.pt")  # the session's weights beside the case
    out = d / "out"
    out.mkdir()
    return d, geom, img, out


def _dense_args(d, out, *extra):
    return [
        str(d / "ct.nii.gz"),
        "--labels",
        str(d / "seg.nii.gz"),
        "--model",
        str(d / "tiny.pt"),
        "--output-dir",
        str(out),
        "--device",
        "cpu",
        *extra,
    ]


def test_dense_pgd_writes_float_outputs_with_source_geometry(files, capsys):
    d, geom, img, out = files
    args = _parse(_dense_args(d, out, "--attack", "pgd", "--eps", "0.05", "--steps", "2", "--json"))
    assert _attack.run(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= {
        "attack",
        "eps_normalized",
        "eps_raw",
        "perturbation_norm",
        "clean",
        "attacked",
        "outputs",
    }
    assert payload["attack"]["attack"] == "pgd" and payload["attack"]["steps"] == 2
    assert payload["eps_normalized"] == 0.05
    assert payload["eps_raw"] == pytest.approx(0.05 * 30.0)
    assert payload["target"]["gradient"] == "whole"
    assert [r["label"] for r in payload["clean"]] == [1, 2, 3, 4, 5]
    outs = {k: Path(v) for k, v in payload["outputs"].items()}
    assert all(p.name.endswith(".nii.gz") and p.parent == out for p in outs.values())
    pert = read_image(outs["perturbation"])
    adv = read_image(outs["perturbed_image"])
    assert pert.image.dtype == adv.image.dtype == np.float32
    assert pert.geometry.matches(geom) and adv.geometry.matches(geom)
    assert 0 < np.abs(pert.image).max() <= payload["eps_raw"] * (1 + 1e-6)
    assert np.allclose(adv.image, img.astype(np.float32) + pert.image, atol=1e-4)
    for key in ("clean_prediction", "attacked_prediction"):
        lab, g, _ = read_labels(outs[key])
        assert lab.shape == img.shape and g.matches(geom)


def test_eps_raw_is_converted_and_table_printed(files, capsys):
    d, _, _, out = files
    args = _parse(
        _dense_args(d, out, "--attack", "fgsm", "--eps-raw", "3", "--gradient", "chunked")
    )
    assert _attack.run(args) == 0
    text = capsys.readouterr().out
    assert "eps = 0.1 normalized = 3 raw units" in text
    assert "dice_clean" in text and "dice_attacked" in text and "liver" in text


def test_refusals(files):
    d, _, _, out = files
    assert (
        _attack.run(_parse(_dense_args(d, out, "--attack", "noise-uniform", "--eps", "0.1"))) == 0
    )
    with pytest.raises(WriteError, match="exists"):
        _attack.run(_parse(_dense_args(d, out, "--attack", "noise-uniform", "--eps", "0.1")))
    assert (
        _attack.run(
            _parse(_dense_args(d, out, "--attack", "noise-uniform", "--eps", "0.1", "--overwrite"))
        )
        == 0
    )
    with pytest.raises(SegEvalError, match="weighting"):
        _attack.run(
            _parse(
                _dense_args(
                    d, out, "--loss", "dice", "--weighting", "segpgd", "--eps", "0.1", "--overwrite"
                )
            )
        )
    (d / "a_file").write_text("x")
    with pytest.raises(WriteError, match="not a folder"):
        _attack.run(_parse(_dense_args(d, d / "a_file", "--eps", "0.1")))
    with pytest.raises(SystemExit):
        _parse(_dense_args(d, out))  # a budget is required
    for bad in ("-1", "0", "nan"):  # a step against the gradient would lower the loss
        with pytest.raises(
            SegEvalError,
            match=f"invalid attack settings: step_size must be finite and > 0, got {float(bad)}",
        ):
            _attack.run(
                _parse(
                    _dense_args(
                        d, out, "--attack", "pgd", "--eps", "0.1", "--step-size", bad, "--overwrite"
                    )
                )
            )
    with pytest.raises(SegEvalError, match="needs --labels"):
        _attack.run(
            _parse(
                [
                    str(d / "ct.nii.gz"),
                    "--model",
                    "builtin-prompt",
                    "--eps",
                    "0.1",
                    "--output-dir",
                    str(out),
                    "--device",
                    "cpu",
                    "--overwrite",
                ]
            )
        )


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--overlap", "2", "--overlap must be in [0, 1), got 2.0"),
        ("--overlap", "-0.5", "--overlap must be in [0, 1), got -0.5"),
        ("--batch-size", "0", "--batch-size must be >= 1, got 0"),
    ],
)
def test_bad_window_options_are_one_line_before_the_model_runs(
    files, capsys, option, value, message
):
    from napari_segeval.cli import main

    d, _, _, out = files
    rc = main(
        [
            "attack",
            *_dense_args(d, out, "--attack", "fgsm", "--eps", "0.1", option, value, "--json"),
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err == f"segeval attack: error: {message}\n"
    assert not any(out.iterdir())


def test_output_dir_is_created_with_parents_and_outputs_are_kept(files, capsys):
    d, _, _, _ = files
    out = d / "new" / "nested"
    argv = _dense_args(d, out, "--attack", "noise-uniform", "--eps", "0.1", "--json")
    assert _attack.run(_parse(argv)) == 0
    outs = json.loads(capsys.readouterr().out)["outputs"]
    assert out.is_dir() and sorted(p.name for p in out.iterdir()) == sorted(
        Path(v).name for v in outs.values()
    )
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(WriteError, match="--overwrite"):
        _attack.run(_parse(argv))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _attack.run(_parse([*argv, "--overwrite"])) == 0


def test_structure_names_as_inspect_prints_them(files, capsys):
    """Unnamed labels: ``label 1`` (as ``segeval inspect`` shows it) and the id both work."""
    d, _, _, out = files
    argv = [
        str(d / "ct.nii.gz"),
        "--labels",
        str(d / "seg.nii.gz"),
        "--model",
        "builtin-prompt",
        "--attack",
        "noise-uniform",
        "--eps",
        "0.05",
        "--device",
        "cpu",
        "--overwrite",
        "--json",
        "--output-dir",
        str(out),
    ]
    for token in ("label 1", "LABEL_1", "1"):
        assert _attack.run(_parse([*argv, "--structure", token])) == 0
        payload = json.loads(capsys.readouterr().out)
        assert [r["label"] for r in payload["clean"]] == [1]
        assert [p["label"] for p in payload["target"]["prompts"]] == [1]
    with pytest.raises(SegEvalError, match=r"structure 'label 2' \(id 2\) is not in the label"):
        _attack.run(_parse([*argv, "--structure", "label 2"]))


@pytest.mark.parametrize("chain", ["full", "per-slice"])
def test_builtin_prompt_on_the_bundled_video(tmp_path, capsys, chain):
    pytest.importorskip("av")
    args = _parse(
        [
            str(SAMPLES / "video" / "echo_001.mp4"),
            "--labels",
            str(SAMPLES / "video" / "echo_001_labels.nii.gz"),
            "--model",
            "builtin-prompt",
            "--structure",
            "1",
            "--attack",
            "fgsm",
            "--eps-raw",
            "8",
            "--chain",
            chain,
            "--output-dir",
            str(tmp_path),
            "--device",
            "cpu",
            "--json",
        ]
    )
    assert _attack.run(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["target"]["chain"] == chain
    assert payload["eps_normalized"] == pytest.approx(8 / 255)
    assert payload["target"]["mode"] == "video" and payload["raw_unit"] == "raw units"
    adv = read_image(Path(payload["outputs"]["perturbed_image"]))
    assert adv.image.dtype == np.float32 and adv.image.ndim == 3
    assert payload["outputs"]["perturbed_image"].endswith(".mha")  # as segeval evaluate saves
    assert payload["attacked"][0]["dice"] <= payload["clean"][0]["dice"]


def test_modality_option_is_used_and_reported(files, capsys):
    d, _, _, out = files
    args = _parse(_dense_args(d, out, "--attack", "fgsm", "--eps", "0.05", "--json"))
    assert _attack.run(args) == 0
    guessed = json.loads(capsys.readouterr().out)
    args = _parse(
        _dense_args(d, out, "--attack", "fgsm", "--eps", "0.05", "--modality", "CT", "--overwrite")
    )
    assert _attack.run(args) == 0
    text = capsys.readouterr().out
    assert guessed["modality"] != "CT" and "modality CT" in text and " HU" in text


def _evaluate_names(source: Path, case) -> dict[str, str]:
    """Suffixes of the files ``segeval evaluate`` saves for ``case`` read from ``source``."""
    from napari_segeval.evaluation.protocols import CaseArrays
    from napari_segeval.evaluation.store import encode_arrays

    label = np.zeros(case.spatial_shape, np.uint8)
    image = np.zeros(case.image.shape, np.float32)
    arrays = {"clean": label, "pgd": label, "perturbed:pgd": image, "perturbation:pgd": image}
    out = encode_arrays("c", CaseArrays(case.geometry, case.axes, str(source), arrays))
    suffix = {k: Path(rel).name.partition(".")[2] for k, (rel, _) in out.items()}
    return {
        "clean_prediction": suffix["clean"],
        "attacked_prediction": suffix["pgd"],
        "perturbed_image": suffix["perturbed:pgd"],
        "perturbation": suffix["perturbation:pgd"],
    }


@pytest.mark.parametrize("kind", ["2d", "nifti"])
def test_attack_saves_in_the_formats_evaluate_saves(kind, files, tmp_path, capsys):
    """One rule (io._formats.output_formats): a 2D float image is .tif from both commands."""
    from napari_segeval.io import read_case

    if kind == "2d":
        image, labels = (
            SAMPLES / "skin" / "skin_001.png",
            SAMPLES / "skin" / "skin_001_segmentation.png",
        )
        argv = [
            str(image),
            "--labels",
            str(labels),
            "--model",
            "builtin-prompt",
            "--attack",
            "fgsm",
            "--eps",
            "0.02",
            "--output-dir",
            str(tmp_path / "o"),
            "--device",
            "cpu",
            "--json",
        ]
    else:
        d, _, _, out = files
        image, labels = d / "ct.nii.gz", d / "seg.nii.gz"
        argv = _dense_args(d, out, "--attack", "fgsm", "--eps", "0.02", "--json")
    assert _attack.run(_parse(argv)) == 0
    outs = json.loads(capsys.readouterr().out)["outputs"]
    got = {k: Path(v).name.partition(".")[2] for k, v in outs.items()}
    assert got == _evaluate_names(image, read_case(image, labels))
    if kind == "2d":
        assert got["perturbed_image"] == "tif" and got["clean_prediction"] == "png"
        assert read_image(outs["perturbed_image"]).image.dtype == np.float32


@pytest.mark.parametrize(
    "source, axes",
    [
        ("echo.mp4", "tyx"),
        ("frames", "tyxc"),
        ("ct.mhd", "zyx"),
        ("cells.tif", "yx"),
        ("polyp.jpg", "yxc"),
        ("slice.nii", "yx"),
        ("series", "zyx"),
    ],
)
def test_attack_output_names_follow_the_evaluate_rule(source, axes):
    from napari_segeval.io._formats import output_formats

    labels, images = output_formats(source, axes)
    paths = _attack.output_paths(Path(source), argparse.Namespace(axes=axes), Path("o"))
    assert paths["clean_prediction"].name.endswith(labels)
    assert paths["perturbation"].name.endswith(images)


def test_a_label_id_above_the_metrics_limit_is_one_line_before_the_model_runs(files, capsys):
    from napari_segeval.cli import main
    from napari_segeval.io import read_labels, write_labels

    d, _, _, out = files
    labels, geom, _ = read_labels(d / "seg.nii.gz")
    labels = labels.astype(np.uint16)
    labels[0, 0, 0] = 5000
    big = write_labels(d / "big.nii.gz", labels, geom)
    rc = main(
        [
            "attack",
            str(d / "ct.nii.gz"),
            "--labels",
            str(big),
            "--model",
            "threshold",
            "--attack",
            "noise-gaussian",
            "--eps",
            "0.1",
            "--output-dir",
            str(out),
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and not any(out.iterdir())
    assert captured.err == (
        f"segeval attack: error: {big}: label id 5000 is above the largest "
        "id the metrics take (4095)\n"
    )
