import argparse
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from napari_segeval._errors import SegEvalError, WriteError
from napari_segeval.cli import _attack
from napari_segeval.io import Geometry, read_image, read_labels, write_image, write_labels

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def _parse(argv):
    parser = argparse.ArgumentParser()
    _attack.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["attack", *argv])


@pytest.fixture
def files(tmp_path):
    from napari_segeval.models.dense import BUILTIN_PLANS
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    torch.manual_seed(0)
    cfg = {"in_channels": 1, "num_classes": 6, "base_channels": 2, "levels": 2}
    payload = dict(BUILTIN_PLANS, config=cfg, patch_size=[8, 16, 16], spacing=[2.5, 2.4, 2.4],
                   intensity={"lower": -20.0, "upper": 160.0, "mean": 60.0, "std": 30.0},
                   state_dict=UNet3D(UNetConfig(**cfg)).state_dict())
    torch.save(payload, tmp_path / "tiny.pt")
    geom = Geometry((2.5, 1.2, 1.2), (5.0, -3.0, 2.0), tuple(np.eye(3).ravel()))
    rng = np.random.default_rng(0)
    img = rng.normal(50, 40, (8, 24, 20)).astype(np.int16)
    lab = np.zeros(img.shape, np.uint8)
    lab[2:6, 4:12, 4:12] = 1
    write_image(tmp_path / "ct.nii.gz", img, geom)
    write_labels(tmp_path / "seg.nii.gz", lab, geom)
    out = tmp_path / "out"
    out.mkdir()
    return tmp_path, geom, img, out


def _dense_args(d, out, *extra):
    return [str(d / "ct.nii.gz"), "--labels", str(d / "seg.nii.gz"), "--model",
            str(d / "tiny.pt"), "--output-dir", str(out), "--device", "cpu", *extra]


def test_dense_pgd_writes_float_outputs_with_source_geometry(files, capsys):
    d, geom, img, out = files
    args = _parse(_dense_args(d, out, "--attack", "pgd", "--eps", "0.05", "--steps", "2",
                              "--json"))
    assert _attack.run(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= {"attack", "eps_normalized", "eps_raw", "perturbation_norm", "clean",
                            "attacked", "outputs"}
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
    args = _parse(_dense_args(d, out, "--attack", "fgsm", "--eps-raw", "3", "--gradient",
                              "chunked"))
    assert _attack.run(args) == 0
    text = capsys.readouterr().out
    assert "eps = 0.1 normalized = 3 raw units" in text
    assert "dice_clean" in text and "dice_attacked" in text and "liver" in text


def test_refusals(files):
    d, _, _, out = files
    assert _attack.run(_parse(_dense_args(d, out, "--attack", "noise-uniform", "--eps", "0.1"))) == 0
    with pytest.raises(WriteError, match="exists"):
        _attack.run(_parse(_dense_args(d, out, "--attack", "noise-uniform", "--eps", "0.1")))
    assert _attack.run(_parse(_dense_args(d, out, "--attack", "noise-uniform", "--eps", "0.1",
                                          "--overwrite"))) == 0
    with pytest.raises(SegEvalError, match="weighting"):
        _attack.run(_parse(_dense_args(d, out, "--loss", "dice", "--weighting", "segpgd",
                                       "--eps", "0.1", "--overwrite")))
    with pytest.raises(WriteError, match="does not exist"):
        _attack.run(_parse(_dense_args(d, d / "missing", "--eps", "0.1")))
    with pytest.raises(SystemExit):
        _parse(_dense_args(d, out))  # a budget is required
    with pytest.raises(SegEvalError, match="needs --labels"):
        _attack.run(_parse([str(d / "ct.nii.gz"), "--model", "builtin-prompt", "--eps", "0.1",
                            "--output-dir", str(out), "--device", "cpu", "--overwrite"]))


@pytest.mark.parametrize("chain", ["full", "per-slice"])
def test_builtin_prompt_on_the_bundled_video(tmp_path, capsys, chain):
    pytest.importorskip("av")
    args = _parse([str(SAMPLES / "video" / "echo_001.mp4"), "--labels",
                   str(SAMPLES / "video" / "echo_001_labels.nii.gz"), "--model", "builtin-prompt",
                   "--structure", "1", "--attack", "fgsm", "--eps-raw", "8", "--chain", chain,
                   "--output-dir", str(tmp_path), "--device", "cpu", "--json"])
    assert _attack.run(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["target"]["chain"] == chain
    assert payload["eps_normalized"] == pytest.approx(8 / 255)
    assert payload["target"]["mode"] == "video" and payload["raw_unit"] == "raw units"
    adv = read_image(Path(payload["outputs"]["perturbed_image"]))
    assert adv.image.dtype == np.float32 and adv.image.ndim == 3
    assert payload["outputs"]["perturbed_image"].endswith(".nii.gz")
    assert payload["attacked"][0]["dice"] <= payload["clean"][0]["dice"]
