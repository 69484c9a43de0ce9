"""MedSAM2 checkpoint loading: one-line errors, optional-dependency error, laziness."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import torch

from napari_segeval._errors import MissingDependencyError, ReadError
from napari_segeval.models.medsam2 import _build

needs_sam2 = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("sam2", "hydra")),
    reason="Meta's sam2 package / hydra-core (extra 'medsam2') not installed",
)
WHAT = "MedSAM2 checkpoint"


def test_import_is_lazy():
    code = (
        "import sys, napari_segeval.models, napari_segeval.models.medsam2;"
        "print(sorted(m for m in ('torch','sam2','hydra') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sam2", None)  # makes `import sam2` fail
    with pytest.raises(MissingDependencyError, match=r"napari-segeval\[medsam2\]"):
        _build.import_sam2()


def test_not_a_file(tmp_path):
    with pytest.raises(ReadError, match=f"nope.pt: {WHAT} not found$"):
        _build.read_state_dict(tmp_path / "nope.pt")


def test_not_a_torch_file(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"definitely not a checkpoint")
    with pytest.raises(ReadError, match=rf"bad.pt: not a readable {WHAT} \(truncated, corrupt"):
        _build.read_state_dict(bad)


def test_truncated(tmp_path):
    good = tmp_path / "good.pt"
    torch.save({"model": {"w": torch.zeros(1000)}}, good)
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good.read_bytes()[:-300])
    with pytest.raises(ReadError, match=f"cut.pt: not a readable {WHAT}"):
        _build.read_state_dict(cut)


def test_dict_without_model(tmp_path):
    p = tmp_path / "sd.pt"
    torch.save({"state_dict": {}}, p)
    with pytest.raises(
        ReadError,
        match=rf"sd.pt: not a {WHAT}: expected a dict with a 'model' "
        r"state dict, found \['state_dict'\]",
    ):
        _build.read_state_dict(p)


def test_pickled_code_is_refused_and_never_runs(tmp_path, code_payload):
    p = tmp_path / "evil.pt"
    torch.save({"model": {}, "obj": code_payload}, p)
    with pytest.raises(ReadError, match=f"evil.pt: refused: this {WHAT} contains Python code"):
        _build.read_state_dict(p)
    assert not code_payload.marker.exists()


@needs_sam2
def test_mismatched_keys_and_shapes(tmp_path):
    net = _build.build_network()
    state = dict(net.state_dict())
    bad = dict(state)
    bad.pop("no_mem_embed")
    bad["extra.weight"] = torch.zeros(1)
    p = tmp_path / "keys.pt"
    torch.save({"model": bad}, p)
    with pytest.raises(
        ReadError,
        match=rf"keys.pt: this {WHAT} does not fit SAM2.1 Hiera-tiny "
        r"512: 1 missing keys \(e\.g\. no_mem_embed\), "
        r"1 unexpected keys \(e\.g\. extra\.weight\)$",
    ):
        _build.load_network(p)
    shaped = dict(state)
    shaped["no_mem_embed"] = torch.zeros(1, 1, 128)
    torch.save({"model": shaped}, p)
    with pytest.raises(
        ReadError,
        match=r"1 tensors have the wrong shape \(e\.g\. no_mem_embed: "
        r"\(1, 1, 128\) in the file, \(1, 1, 256\) in the model\)",
    ):
        _build.load_network(p)
