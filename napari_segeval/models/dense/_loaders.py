"""Dense models from paths: built-in-architecture weights, TorchScript, nnU-Net folders.

Names such as ``builtin-ct`` are :func:`napari_segeval.models.registry.load_dense`'s.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.models._checkpoint import (
    check_torch,
    content_error,
    load_state_strict,
    read_checkpoint,
)
from napari_segeval.models.dense._model import DenseModel
from napari_segeval.models.dense._plans import BUILTIN_PLANS, model_from_plans, read_sidecar
from napari_segeval.models.dense.unet2d import FORMAT as UNET2D_FORMAT
from napari_segeval.models.dense.unet2d import UNet2DModel

#: What a built-in-architecture weights file is called in messages.
WHAT = "dense model weight file"


def is_torchscript(path: Path) -> bool:
    """Whether ``path`` is a TorchScript archive (a zip with a ``code/`` folder)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return any(n.split("/", 1)[-1].startswith("code/") for n in zf.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def _infer_unet_config(state: dict, path: Path) -> dict:
    try:
        stem = state["stem.0.weight"]
        head = state["head.weight"]
    except KeyError as exc:
        raise content_error(
            path, WHAT, f"not a state dict of the built-in 3D U-Net (no key {exc})"
        ) from None
    levels = 1 + sum(1 for k in state if k.startswith("enc.") and k.endswith(".0.weight"))
    return {
        "in_channels": int(stem.shape[1]),
        "num_classes": int(head.shape[0]),
        "base_channels": int(stem.shape[0]),
        "levels": levels,
    }


def load_unet_weights(path: Path, device: Any, name: str | None = None) -> DenseModel | UNet2DModel:
    """Load a built-in-architecture weights file (ours, or a plain state dict + plans).

    A ``builtin-2d`` file gives a UNet2DModel; a plain state dict takes
    :data:`~napari_segeval.models.dense.BUILTIN_PLANS` updated from its ``FILE.json``.
    """
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    path = Path(path)
    obj = read_checkpoint(path, WHAT)
    if isinstance(obj, dict) and obj.get("format") == UNET2D_FORMAT:  # a builtin-2d model file
        return UNet2DModel.from_checkpoint(obj, path, device=str(device))
    if not isinstance(obj, dict):
        raise content_error(path, WHAT, f"expected a dict of tensors, found {type(obj).__name__}")
    if "state_dict" in obj:
        plans = {k: v for k, v in obj.items() if k != "state_dict"}
        state = obj["state_dict"]
    else:
        state = obj
        plans = {**BUILTIN_PLANS, **read_sidecar(path)}
        plans["config"] = _infer_unet_config(state, path)
    if plans.get("architecture", "unet3d") != "unet3d":
        raise content_error(path, WHAT, f"unknown architecture {plans.get('architecture')!r}")
    try:
        net = UNet3D(UNetConfig(**plans["config"]))
    except (TypeError, KeyError, ValueError, RuntimeError) as exc:
        raise content_error(path, WHAT, f"invalid 3D U-Net config ({exc})") from None
    load_state_strict(net, state, path, WHAT, "the 3D U-Net of its config")
    meta = {"file": str(path), "training": plans.get("training")}
    return model_from_plans(plans, net, name or str(path), device, meta)


def load_torchscript(path: Path, device: Any, trust: bool) -> DenseModel | UNet2DModel:
    """Load a TorchScript archive (executes code: needs ``trust``) with its plans JSON."""
    if not trust:
        raise SegEvalError(
            f"{path}: TorchScript files run code; load them only from a source you trust "
            "and pass trust_torchscript=True (CLI: --trust-torchscript)"
        )
    torch = check_torch()
    plans = read_sidecar(path)
    missing = [k for k in ("patch_size", "num_classes") if k not in plans]
    if missing:
        raise SegEvalError(
            f"{path}: a TorchScript model needs a plans file {path.name}.json with "
            f"{', '.join(missing)} (optional: spacing, intensity, structures)"
        )
    try:
        net = torch.jit.load(str(path), map_location="cpu")
    except Exception:  # noqa: BLE001 - any failure means an unreadable archive
        raise ReadError(f"{path}: not a readable TorchScript archive") from None
    return model_from_plans(plans, net, str(path), device, {"file": str(path)})


def load_path(
    path: Path, device: Any, *, trust_torchscript: bool = False
) -> DenseModel | UNet2DModel:
    """A dense model from an existing path: nnU-Net folder, TorchScript file or weights file."""
    path = Path(path)
    if path.is_dir():
        from napari_segeval.models.dense._nnunet import load_nnunet_folder

        return load_nnunet_folder(path, device)
    if is_torchscript(path):
        return load_torchscript(path, device, trust_torchscript)
    return load_unet_weights(path, device)
