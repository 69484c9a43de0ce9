"""Dense model files: the built-in weights, plain state dicts, TorchScript, nnU-Net folders."""

import json

import pytest
import torch

from napari_segeval._errors import MissingDependencyError, ReadError, SegEvalError
from napari_segeval.models.dense import BUILTIN_CT_WEIGHTS
from napari_segeval.models.dense._nnunet import plans_from_nnunet
from napari_segeval.models.dense.unet import UNet3D, UNetConfig
from napari_segeval.models.registry import load_dense

WHAT = "dense model weight file"


def test_builtin_weights_load_with_weights_only():
    path = BUILTIN_CT_WEIGHTS
    obj = torch.load(path, map_location="cpu", weights_only=True)
    assert obj["format"] == "napari-segeval-dense/1" and "state_dict" in obj
    assert path.stat().st_size < 5_000_000
    m = load_dense("builtin-ct", device="cpu")
    assert m.num_classes == 6 and m.structures[5] == "liver_tumour"
    assert not m.network.training
    assert all(not p.requires_grad for p in m.network.parameters())
    assert m.raw_per_normalized_unit == pytest.approx(m.intensity.std)
    assert m.postprocessing.organs == (1, 2, 3, 4)
    assert m.postprocessing.lesion_min_mm3[5] > 0


def test_own_format_and_plain_state_dict(tiny_weights, tmp_path):
    m = load_dense(str(tiny_weights), device="cpu")
    assert m.patch_size == (8, 16, 16) and m.spacing == (2.5, 2.4, 2.4)
    plain = tmp_path / "plain.pt"
    torch.save(torch.load(tiny_weights, weights_only=True)["state_dict"], plain)
    (tmp_path / "plain.pt.json").write_text(json.dumps({"patch_size": [8, 16, 16]}))
    m2 = load_dense(str(plain), device="cpu")
    assert m2.patch_size == (8, 16, 16)
    assert m2.network.config == UNetConfig(1, 6, 2, 2)  # inferred from tensor shapes


def test_corrupt_and_mismatched_files(tmp_path, tiny_weights):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ReadError, match=f"bad.pt: not a readable {WHAT}"):
        load_dense(str(bad), device="cpu")
    with pytest.raises(ReadError, match="missing.pt: no such model file or folder"):
        load_dense(str(tmp_path / "missing.pt"), device="cpu")
    obj = torch.load(tiny_weights, weights_only=True)
    obj["config"] = {**obj["config"], "base_channels": 3}
    wrong = tmp_path / "wrong.pt"
    torch.save(obj, wrong)
    with pytest.raises(
        ReadError,
        match=f"wrong.pt: this {WHAT} does not fit the 3D U-Net of its "
        r"config: \d+ tensors have the wrong shape",
    ):
        load_dense(str(wrong), device="cpu")
    other = tmp_path / "other.pt"
    torch.save({"conv.weight": torch.zeros(2)}, other)
    with pytest.raises(
        ReadError, match=f"other.pt: not a {WHAT}: not a state dict of the built-in 3D U-Net"
    ):
        load_dense(str(other), device="cpu")
    listed = tmp_path / "list.pt"
    torch.save([torch.zeros(2)], listed)
    with pytest.raises(ReadError, match=f"list.pt: not a {WHAT}: expected a dict of tensors"):
        load_dense(str(listed), device="cpu")


def test_pickled_objects_are_refused(tmp_path):
    path = tmp_path / "pickle.pt"
    torch.save({"state_dict": {}, "obj": UNetConfig()}, path)  # arbitrary class: not weights_only
    with pytest.raises(
        ReadError, match=f"pickle.pt: refused: this {WHAT} contains Python code"
    ) as e:
        load_dense(str(path), device="cpu")
    assert "weights_only" not in str(e.value)


def test_torchscript_needs_trust_and_plans(tmp_path):
    net = UNet3D(UNetConfig(num_classes=3, base_channels=2, levels=2)).eval()
    path = tmp_path / "model.ts"
    torch.jit.trace(net, torch.zeros(1, 1, 8, 8, 8)).save(str(path))
    with pytest.raises(SegEvalError, match="trust_torchscript"):
        load_dense(str(path), device="cpu")
    with pytest.raises(SegEvalError, match="plans file"):
        load_dense(str(path), trust_torchscript=True, device="cpu")
    (tmp_path / "model.ts.json").write_text(
        json.dumps({"patch_size": [8, 8, 8], "num_classes": 3, "structures": {"1": "a", "2": "b"}})
    )
    m = load_dense(str(path), trust_torchscript=True, device="cpu")
    assert m.num_classes == 3 and m.spacing is None and m.intensity is None
    x = torch.randn(1, 1, 8, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(m.network(x), net(x))


def _nnunet_folder(tmp_path, scheme="CTNormalization"):
    folder = tmp_path / "nnUNetTrainer__nnUNetPlans__3d_fullres"
    folder.mkdir()
    plans = {
        "configurations": {
            "3d_fullres": {
                "patch_size": [64, 128, 128],
                "spacing": [2.5, 0.8, 0.8],
                "normalization_schemes": [scheme],
                "use_mask_for_norm": [False],
                "architecture": {
                    "network_class_name": "x",
                    "arch_kwargs": {},
                    "_kw_requires_import": [],
                },
            }
        },
        "foreground_intensity_properties_per_channel": {
            "0": {"mean": 99.0, "std": 40.0, "percentile_00_5": -50.0, "percentile_99_5": 250.0}
        },
        "transpose_forward": [0, 1, 2],
    }
    (folder / "plans.json").write_text(json.dumps(plans))
    (folder / "dataset.json").write_text(
        json.dumps(
            {"labels": {"background": 0, "liver": 1, "tumour": 2}, "channel_names": {"0": "CT"}}
        )
    )
    return folder


def test_nnunet_plans_parsed(tmp_path):
    plans = plans_from_nnunet(_nnunet_folder(tmp_path))
    assert plans["patch_size"] == [64, 128, 128] and plans["num_classes"] == 3
    assert plans["structures"] == {1: "liver", 2: "tumour"}
    assert plans["intensity"]["lower"] == -50.0 and plans["intensity"]["std"] == 40.0
    with pytest.raises(ReadError, match="nnU-Net"):
        plans_from_nnunet(tmp_path)


def test_a_folder_without_plans_is_not_an_nnunet_folder(tmp_path):
    (tmp_path / "results").mkdir()
    with pytest.raises(ReadError) as err:
        load_dense(str(tmp_path / "results"), device="cpu")
    assert (
        str(err.value) == f"{tmp_path / 'results'}: not an nnU-Net v2 result folder (no plans.json)"
    )


def test_nnunet_folder_needs_extra(tmp_path):
    try:
        import nnunetv2  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependencyError, match="nnunet"):
            load_dense(str(_nnunet_folder(tmp_path)), device="cpu")
    else:  # pragma: no cover - depends on the environment
        pytest.skip("nnunetv2 installed: the missing-extra path cannot be exercised")
