import argparse
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from napari_segeval._errors import SegEvalError, WriteError
from napari_segeval.cli import _segment
from napari_segeval.io import Geometry, read_labels, write_image, write_labels


def _parse(argv):
    parser = argparse.ArgumentParser()
    _segment.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["segment", *argv])


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
    return tmp_path, geom, img.shape


def test_segment_writes_source_geometry_and_json(files, capsys):
    d, geom, shape = files
    args = _parse([str(d / "ct.nii.gz"), "--model", str(d / "tiny.pt"), "--output",
                   str(d / "pred.nii.gz"), "--labels", str(d / "seg.nii.gz"), "--json",
                   "--device", "cpu"])
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
    base = [str(d / "ct.nii.gz"), "--model", str(d / "tiny.pt"), "--output", str(out),
            "--device", "cpu"]
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
