"""Plans: what a dense network needs around it (spacing, patch, intensity, structures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.inference.intensity import IntensityStats
from napari_segeval.inference.postprocess import config_from_mapping
from napari_segeval.models.dense._model import DenseModel

#: The shipped weights of the built-in CT model (``builtin-ct``).
BUILTIN_CT_WEIGHTS = Path(__file__).parent / "weights" / "builtin_ct_unet3d.pt"

#: Plans of the built-in CT model.
BUILTIN_PLANS: dict = {
    "format": "napari-segeval-dense/1",
    "architecture": "unet3d",
    "config": {"in_channels": 1, "num_classes": 6, "base_channels": 8, "levels": 4},
    "spacing": [2.5, 1.6, 1.6],
    "patch_size": [32, 48, 48],
    "modality": "CT",
    "structures": {
        "1": "liver",
        "2": "spleen",
        "3": "kidney_right",
        "4": "kidney_left",
        "5": "liver_tumour",
    },
    "organs": [1, 2, 3, 4],
    "lesions": [5],
}


def read_sidecar(path: Path) -> dict:
    """The plans JSON beside a weights file (``FILE.json`` or ``FILE`` with ``.json``), or ``{}``."""
    side = path.with_name(path.name + ".json")
    if not side.exists():
        side = path.with_suffix(".json")
    if not side.exists():
        return {}
    try:
        return json.loads(side.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReadError(f"{side}: invalid plans JSON ({exc})") from exc


def channel_stats(plans: dict, name: str) -> tuple[int, tuple[IntensityStats | None, ...]]:
    """Input channels and their intensity statistics from a plans dict.

    ``in_channels`` from ``config`` or the top level (default 1); ``intensity``: one
    statistics dict, a list with one dict (or null) per channel, or null.
    """
    n = int(plans.get("config", {}).get("in_channels", plans.get("in_channels", 1)))
    if n < 1:
        raise SegEvalError(f"{name}: plans give {n} input channels")
    raw = plans.get("intensity")
    if isinstance(raw, list):
        if len(raw) != n:
            raise SegEvalError(
                f"{name}: plans give intensity statistics for {len(raw)} "
                f"channels, the network takes {n}"
            )
        return n, tuple(IntensityStats.from_dict(d) if d else None for d in raw)
    if raw and n > 1:
        raise SegEvalError(
            f"{name}: plans give one set of intensity statistics for {n} input "
            "channels; give a list with one per channel"
        )
    return n, ((IntensityStats.from_dict(raw) if raw else None),) * n


def model_from_plans(plans: dict, network: Any, name: str, device: Any, meta: dict) -> DenseModel:
    """Wrap ``network`` (frozen, eval mode, on ``device``) with its plans as a DenseModel.

    Plans keys: ``num_classes`` (or ``config.num_classes``), ``patch_size``, ``spacing``,
    ``structures``, ``intensity``/``in_channels`` (:func:`channel_stats`), ``mr_minmax``,
    ``organs``/``lesions``/``lesion_min_mm3``/``lesion_mode``, ``mirror_axes``.
    """
    structures = {int(k): str(v) for k, v in plans.get("structures", {}).items()}
    num_classes = int(plans.get("config", {}).get("num_classes", plans.get("num_classes", 0)))
    if num_classes < 2:
        raise SegEvalError(f"{name}: plans do not give the number of classes (>= 2)")
    in_channels, stats = channel_stats(plans, name)
    post = config_from_mapping(
        {
            "organs": plans.get("organs", ()),
            "lesions": plans.get("lesions", ()),
            "lesion_min_mm3": plans.get("lesion_min_mm3", {}),
            "lesion_mode": plans.get("lesion_mode", "remove"),
        }
    )
    network.eval()
    for p in network.parameters():  # not requires_grad_(False): ScriptModules lack it
        p.requires_grad_(False)
    return DenseModel(
        network=network.to(device),
        num_classes=num_classes,
        structures=structures,
        patch_size=tuple(int(p) for p in plans["patch_size"]),
        spacing=tuple(float(s) for s in plans["spacing"]) if plans.get("spacing") else None,
        intensity=stats[0],
        postprocessing=post,
        mirror_axes=tuple(int(a) for a in plans.get("mirror_axes", ())),
        name=name,
        device=device,
        meta=meta,
        in_channels=in_channels,
        channel_intensity=stats if in_channels > 1 else (),
        mr_minmax=None if plans.get("mr_minmax") is None else bool(plans["mr_minmax"]),
    )
