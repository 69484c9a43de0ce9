"""``medsam2-3d``: box on the reference middle slice, bidirectional propagation, DSC + NSD
(MedSAM2, Ma et al. 2025; ``docs/protocols.md``; the code: :mod:`._promptable`)."""

from __future__ import annotations

from napari_segeval.evaluation.protocols import Preset
from napari_segeval.evaluation.protocols._params import differences
from napari_segeval.evaluation.protocols._promptable import Medsam2Params, protocol, provenance


def summarize(rows: list[dict], params: Medsam2Params) -> dict:
    """Median and IQR of DSC and NSD per structure, per task and over tasks."""
    from napari_segeval.evaluation.summary import median_iqr

    return {
        "aggregation": "median with IQR (quartiles by linear interpolation)",
        **provenance(rows),
        **median_iqr(rows),
    }


#: Deliberate differences of the defaults from the published recipe (docs/protocols.md).
DIFFERENCES = differences("medsam2-3d")

MEDSAM2 = Preset(
    name="medsam2",
    params={
        "ct_mapping": "minmax",
        "resize": "pillow",
        "connectivity": 26,
        "decision": "logit",
        "stop_when_empty": False,
        "scoring": "per-structure",
        "jitter_mode": "outward",
        "keep_largest": True,
    },
    source=(
        "Ma et al. 2025, MedSAM2 (arXiv 2504.03600), and its inference script "
        "medsam2_infer_3D_CT.py (bowang-lab/MedSAM2)"
    ),
    differences=differences("medsam2-3d medsam2"),
)


CVPR24 = Preset(
    name="cvpr24",
    params={
        "model": "litemedsam",
        "prompt": "box3d",
        "ct_mapping": "minmax",
        "keep_largest": False,
        "stop_when_empty": False,
        "scoring": "ordered",
        "decision": "logit",
        "nsd_min_dice": 0.2,
        "tolerance_mm": 2.0,
    },
    source=(
        "the CVPR 2024 challenge 'Segment Anything in Medical Images on Laptop': "
        "LiteMedSAM's CVPR24_LiteMedSAM_infer.py, pre_CT_MR.py and "
        "evaluation/compute_metrics.py (bowang-lab/MedSAM, branch LiteMedSAM)"
    ),
    differences=differences("medsam2-3d cvpr24"),
)


PROTOCOL = protocol(
    "volume",
    name="medsam2-3d",
    version="1.5",
    params=Medsam2Params,
    differences=DIFFERENCES,
    presets={"medsam2": MEDSAM2, "cvpr24": CVPR24},
    summarize=summarize,
    description=(
        "MedSAM2 3D recipe: box from the reference middle slice (optional jitter), "
        "bidirectional propagation, largest component; DSC and NSD (2 mm) per "
        "structure; median with IQR per task and over tasks."
    ),
)
