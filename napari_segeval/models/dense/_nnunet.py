"""nnU-Net v2 result folders as dense models (optional extra ``nnunet``, imported lazily).

Checkpoints are read as data; ``nnunetv2`` builds the network from ``plans.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from napari_segeval._errors import MissingDependencyError, ReadError, SegEvalError
from napari_segeval.models._checkpoint import content_error, load_state_strict, read_checkpoint
from napari_segeval.models.dense._plans import model_from_plans

#: Our intensity statistics <- nnU-Net's foreground intensity properties (CTNormalization).
_CT_STATS = {"lower": "percentile_00_5", "upper": "percentile_99_5", "mean": "mean", "std": "std"}


def plans_from_nnunet(folder: str | Path, configuration: str | None = None) -> dict:
    """Our plans dict (spacing, patch, channels, intensity, structures) from an nnU-Net v2 folder."""
    folder = Path(folder)
    try:
        plans = json.loads((folder / "plans.json").read_text(encoding="utf-8"))
        dataset = json.loads((folder / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReadError(f"{folder}: not an nnU-Net v2 result folder ({exc})") from exc
    conf_name = configuration or folder.name.rsplit("__", 1)[-1]
    confs = plans.get("configurations", {})
    if conf_name not in confs:
        conf_name = "3d_fullres" if "3d_fullres" in confs else next(iter(confs), "")
    conf = confs.get(conf_name)
    if conf is None:
        raise ReadError(f"{folder / 'plans.json'}: no configurations")
    if list(plans.get("transpose_forward", [0, 1, 2])) != [0, 1, 2]:
        raise SegEvalError(
            f"{folder}: plans transpose the axes ({plans['transpose_forward']}); not supported"
        )
    labels = {int(v): k for k, v in dataset.get("labels", {}).items() if isinstance(v, int)}
    if any(not isinstance(v, int) for v in dataset.get("labels", {}).values()):
        raise SegEvalError(f"{folder / 'dataset.json'}: region-based labels are not supported")
    n_chan = max(len(dataset.get("channel_names") or dataset.get("modality") or {"0": ""}), 1)
    schemes = list(conf.get("normalization_schemes") or ["ZScoreNormalization"])
    masks = list(conf.get("use_mask_for_norm") or [False])
    stats: list[dict | None] = []
    for c in range(n_chan):
        scheme = schemes[min(c, len(schemes) - 1)]
        if scheme == "CTNormalization":
            p = plans["foreground_intensity_properties_per_channel"][str(c)]
            source = {"source": str(folder / "plans.json")}
            stats.append({key: p[name] for key, name in _CT_STATS.items()} | source)
        elif scheme != "ZScoreNormalization" or masks[min(c, len(masks) - 1)]:
            raise SegEvalError(f"{folder}: normalization {scheme} (channel {c}) is not supported")
        else:
            stats.append(None)
    intensity = stats[0] if n_chan == 1 else (stats if all(stats) else None)
    return {
        "configuration": conf_name,
        "patch_size": conf["patch_size"],
        "spacing": conf["spacing"],
        "in_channels": n_chan,
        "intensity": intensity,
        "per_case_zscore": not all(stats),
        "num_classes": max(labels) + 1 if labels else 2,
        "structures": {k: v for k, v in labels.items() if k != 0},
        "arch": conf.get("architecture"),
        "mirror_axes": [0, 1, 2],
    }


def load_nnunet_folder(folder: Path, device: Any, fold: str = "all") -> Any:
    """Build a :class:`DenseModel` from an nnU-Net v2 result folder (first fold found)."""
    if not (folder / "plans.json").is_file():  # before asking for the extra
        raise ReadError(f"{folder}: not an nnU-Net v2 result folder (no plans.json)")
    try:
        from nnunetv2.utilities.get_network_from_plans import get_network_from_plans
    except ImportError as exc:
        raise MissingDependencyError("nnunetv2", "nnunet", "nnU-Net result folders") from exc

    plans = plans_from_nnunet(folder)
    if plans["per_case_zscore"]:
        raise SegEvalError(f"{folder}: per-case z-score (non-CT) nnU-Net models are not supported")
    ckpts = sorted(folder.glob(f"fold_{fold}/checkpoint_final.pth")) or sorted(
        folder.glob("fold_*/checkpoint_final.pth")
    )
    if not ckpts:
        raise ReadError(f"{folder}: no fold_*/checkpoint_final.pth")
    what = "nnU-Net checkpoint"
    ckpt = read_checkpoint(ckpts[0], what)
    if not isinstance(ckpt, dict) or "network_weights" not in ckpt:
        raise content_error(ckpts[0], what, "no 'network_weights' entry")
    arch = plans["arch"]
    net = get_network_from_plans(
        arch["network_class_name"],
        arch["arch_kwargs"],
        arch["_kw_requires_import"],
        plans["in_channels"],
        plans["num_classes"],
        allow_init=True,
        deep_supervision=False,
    )
    load_state_strict(net, ckpt["network_weights"], ckpts[0], what, "the network of plans.json")
    mirror = ckpt.get("inference_allowed_mirroring_axes") or plans["mirror_axes"]
    plans["mirror_axes"] = list(mirror)
    return model_from_plans(plans, net, str(folder), device, {"file": str(ckpts[0])})
