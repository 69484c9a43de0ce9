"""``medsam2-video``: box on the first frame where a structure appears, forward
propagation, one Dice per structure per clip (frames before the prompt count as background;
no surface metrics: time is not a spatial axis)."""

from __future__ import annotations

from napari_segeval.evaluation.protocols import Preset
from napari_segeval.evaluation.protocols._params import differences
from napari_segeval.evaluation.protocols._promptable import VideoParams, protocol, provenance


def summarize(rows: list[dict], params: VideoParams) -> dict:
    """Per-clip DSC table and, per structure, mean/median over clips."""
    from napari_segeval.metrics import summarize as stats

    return {
        **provenance(rows),
        "per_structure": stats(rows, "dice", by=("structure",)),
        "per_clip": [
            {"case": r["case"], "structure": r["structure"], "dice": r["dice"]} for r in rows
        ],
    }


#: Deliberate differences of the defaults from the published recipe (docs/protocols.md).
DIFFERENCES = differences("medsam2-video")

MEDSAM2 = Preset(
    name="medsam2",
    params={
        "keep_largest": False,
        "stop_when_empty": False,
        "resize": "pillow",
        "decision": "logit",
        "scoring": "per-structure",
        "prompt": "mask",
        "jitter_mode": "outward",
    },
    source=(
        "Ma et al. 2025, MedSAM2 (arXiv 2504.03600), and its video inference script "
        "medsam2_infer_video.py (bowang-lab/MedSAM2)"
    ),
    differences=differences("medsam2-video medsam2"),
)


PROTOCOL = protocol(
    "video",
    name="medsam2-video",
    version="1.4",
    params=VideoParams,
    differences=DIFFERENCES,
    presets={"medsam2": MEDSAM2},
    summarize=summarize,
    layout_options={"camus_mode": "sequences"},
    description=(
        "MedSAM2 video recipe: box on the first frame, forward propagation; "
        "DSC per structure per clip."
    ),
)
