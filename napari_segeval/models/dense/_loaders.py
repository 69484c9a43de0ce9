"""Load dense models: the built-in CT U-Net, state dicts, TorchScript, nnU-Net v2 folders."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from napari_segeval._errors import MissingDependencyError, ReadError, SegEvalError
from napari_segeval.inference.intensity import IntensityStats
from napari_segeval.inference.postprocess import config_from_mapping
from napari_segeval.models.dense._model import DenseModel

WEIGHTS_DIR = Path(__file__).parent / "weights"
#: Built-in model names and their weight files.
BUILTIN: dict[str, Path] = {"builtin-ct": WEIGHTS_DIR / "builtin_ct_unet3d.pt"}
MIN_TORCH = (2, 10)


def check_torch() -> Any:
    """Import torch and refuse versions older than :data:`MIN_TORCH`."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a core dependency here
        raise MissingDependencyError("torch", "models", "dense-model inference") from exc
    parts = torch.__version__.split("+")[0].split(".")
    version = tuple(int("".join(ch for ch in p if ch.isdigit()) or 0) for p in parts[:2])
    if version < MIN_TORCH:
        raise SegEvalError(
            f"dense models need torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} "
            f"(found {torch.__version__}): pip install -U torch"
        )
    return torch


def _is_torchscript(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return any(n.split("/", 1)[-1].startswith("code/") for n in zf.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def _torch_load(path: Path) -> Any:
    torch = check_torch()
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError as exc:
        raise ReadError(f"{path}: no such weights file") from exc
    except Exception as exc:  # noqa: BLE001 - corrupt/untrusted files raise many types
        lines = str(exc).splitlines() or [""]
        why = next((ln.strip() for ln in lines if "Unsupported global" in ln), lines[0])
        raise ReadError(
            f"{path}: not a readable weights file for torch.load(weights_only=True) "
            f"({type(exc).__name__}: {why[:240]})"
        ) from exc


def _read_sidecar(path: Path) -> dict:
    side = path.with_name(path.name + ".json")
    if not side.exists():
        side = path.with_suffix(".json")
    if not side.exists():
        return {}
    try:
        return json.loads(side.read_text())
    except (OSError, ValueError) as exc:
        raise ReadError(f"{side}: invalid plans JSON ({exc})") from exc


def _infer_unet_config(state: dict, path: Path) -> dict:
    try:
        stem = state["stem.0.weight"]
        head = state["head.weight"]
    except KeyError as exc:
        raise SegEvalError(
            f"{path}: not a state dict of the built-in 3D U-Net (missing key {exc})"
        ) from exc
    levels = 1 + sum(1 for k in state if k.startswith("enc.") and k.endswith(".0.weight"))
    return {"in_channels": int(stem.shape[1]), "num_classes": int(head.shape[0]),
            "base_channels": int(stem.shape[0]), "levels": levels}


def _build(plans: dict, network: Any, name: str, device: Any, meta: dict) -> DenseModel:
    structures = {int(k): str(v) for k, v in plans.get("structures", {}).items()}
    num_classes = int(plans.get("config", {}).get("num_classes", plans.get("num_classes", 0)))
    if num_classes < 2:
        raise SegEvalError(f"{name}: plans do not give the number of classes (>= 2)")
    intensity = IntensityStats.from_dict(plans["intensity"]) if plans.get("intensity") else None
    post = config_from_mapping({
        "organs": plans.get("organs", ()), "lesions": plans.get("lesions", ()),
        "lesion_min_mm3": plans.get("lesion_min_mm3", {}),
        "lesion_mode": plans.get("lesion_mode", "remove"),
    })
    network.eval()
    for p in network.parameters():
        p.requires_grad_(False)
    return DenseModel(
        network=network.to(device), num_classes=num_classes, structures=structures,
        patch_size=tuple(int(p) for p in plans["patch_size"]),
        spacing=tuple(float(s) for s in plans["spacing"]) if plans.get("spacing") else None,
        intensity=intensity, postprocessing=post,
        mirror_axes=tuple(int(a) for a in plans.get("mirror_axes", ())),
        name=name, device=device, meta=meta,
    )


def load_unet_weights(path: Path, device: Any, name: str | None = None) -> DenseModel:
    """Load a built-in-architecture weights file (ours, or a plain state dict + plans)."""
    from napari_segeval.models.dense._train import BUILTIN_PLANS
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    path = Path(path)
    obj = _torch_load(path)
    if not isinstance(obj, dict):
        raise SegEvalError(f"{path}: expected a dict of tensors, got {type(obj).__name__}")
    if "state_dict" in obj:
        plans = {k: v for k, v in obj.items() if k != "state_dict"}
        state = obj["state_dict"]
    else:
        state = obj
        plans = {**BUILTIN_PLANS, **_read_sidecar(path)}
        plans["config"] = _infer_unet_config(state, path)
    if plans.get("architecture", "unet3d") != "unet3d":
        raise SegEvalError(f"{path}: unknown architecture {plans.get('architecture')!r}")
    try:
        net = UNet3D(UNetConfig(**plans["config"]))
        net.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, KeyError, AttributeError) as exc:
        raise SegEvalError(
            f"{path}: weights do not match the 3D U-Net architecture "
            f"({str(exc).splitlines()[0][:300]})"
        ) from exc
    meta = {"file": str(path), "training": plans.get("training")}
    return _build(plans, net, name or str(path), device, meta)


def load_torchscript(path: Path, device: Any, trust: bool) -> DenseModel:
    """Load a TorchScript archive (executes code: needs ``trust``) with its plans JSON."""
    if not trust:
        raise SegEvalError(
            f"{path}: TorchScript files run code; load them only from a source you trust "
            "and pass trust_torchscript=True (CLI: --trust-torchscript)"
        )
    torch = check_torch()
    plans = _read_sidecar(path)
    missing = [k for k in ("patch_size", "num_classes") if k not in plans]
    if missing:
        raise SegEvalError(
            f"{path}: a TorchScript model needs a plans file {path.name}.json with "
            f"{', '.join(missing)} (optional: spacing, intensity, structures)"
        )
    try:
        net = torch.jit.load(str(path), map_location="cpu")
    except Exception as exc:  # noqa: BLE001
        raise ReadError(f"{path}: not a readable TorchScript archive ({exc})") from exc
    return _build(plans, net, str(path), device, {"file": str(path)})


def load_dense_model(
    spec: str = "builtin-ct", *, trust_torchscript: bool = False, device: Any = None
) -> DenseModel:
    """Load a dense segmentation model.

    Parameters
    ----------
    spec : str
        ``"builtin-ct"`` (shipped weights), a ``.pt``/``.pth`` file (built-in
        architecture: our weights file, or a plain state dict with an optional
        ``FILE.json`` plans sidecar), a TorchScript archive (with ``FILE.json``
        plans), or an nnU-Net v2 result folder (``plans.json``, ``dataset.json``,
        ``fold_*/checkpoint_final.pth``; extra ``nnunet``).
    trust_torchscript : bool
        Allow TorchScript archives (they execute code).
    device : str or torch.device, optional
        Default: CUDA, then MPS, then CPU.

    Returns
    -------
    DenseModel

    Examples
    --------
    >>> m = load_dense_model("builtin-ct", device="cpu")
    >>> m.num_classes, m.structures[1], m.patch_size
    (6, 'liver', (32, 48, 48))
    """
    check_torch()
    from napari_segeval.models._device import pick_device

    dev = pick_device(str(device) if device is not None else None)
    if spec in BUILTIN:
        return load_unet_weights(BUILTIN[spec], dev, name=spec)
    path = Path(spec).expanduser()
    if path.is_dir():
        from napari_segeval.models.dense._nnunet import load_nnunet_folder

        return load_nnunet_folder(path, dev)
    if not path.exists():
        raise ReadError(
            f"{path}: no such model file or folder (built-in models: {', '.join(BUILTIN)})"
        )
    if _is_torchscript(path):
        return load_torchscript(path, dev, trust_torchscript)
    return load_unet_weights(path, dev)
