"""``medsam2-video``: box on the first frame, forward propagation, DSC per structure per clip.

A structure is prompted on the first frame where it appears (its ``key_slice``); its Dice is
one number over the whole clip (frames before the prompt count as background). No surface
metrics: time is not a spatial axis.
"""

from __future__ import annotations

from napari_segeval.evaluation.protocols import Preset
from napari_segeval.evaluation.protocols._params import paragraphs
from napari_segeval.evaluation.protocols._promptable import VideoParams, protocol, provenance
from napari_segeval.evaluation.protocols.medsam2_3d import (
    BUILTIN,
    DEFAULT_MODEL,
    DICE_NOTE,
    HOLES,
)


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
DIFFERENCES = (
    DICE_NOTE,
    DEFAULT_MODEL,
    *paragraphs("""
        - The largest connected component is taken across the whole clip, with time as a third axis,
          and propagation stops at the first empty frame, so a structure that leaves and re-enters
          the view is truncated; MedSAM2 does neither (keep_largest=false, stop_when_empty=false).
        - Each structure is prompted on the first frame where it appears in the reference; MedSAM2
          prompts the first frame of the clip.
        - Frames are resized as floating-point images; MedSAM2 converts them to 8-bit RGB and
          resizes them with Pillow (bicubic) (resize=pillow, MedSAM2 backend).
        - Several structures are merged into one label map before scoring; MedSAM2's video script
          tracks the objects of the first frame together (one inference state, one mask per object)
          and saves them merged into one label image per frame, the lowest object id winning where
          masks overlap; it computes no score (scoring=per-structure scores each structure's own
          mask).
        - Each structure is prompted with its box; MedSAM2's video script gives the frame's
          reference mask (prompt=mask).
        - A frame is foreground where its probability is above 0.5; MedSAM2 thresholds the logit at
          0 (decision=logit).
    """),
)

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
    differences=(
        DICE_NOTE,
        BUILTIN,
        HOLES,
        *paragraphs("""
            - Each structure is prompted with its reference mask on the first frame where it
              appears, which is the clip's first frame for clips annotated from their start (their
              setting); their script refuses objects that appear only later.
            - Frames are read by the project's readers at their stored 8-bit values; their script
              reads a folder of JPEG frames.
            - Each structure is scored on its own mask, over all frames of the clip at once (frames
              before its prompt count as predicted background), overlaps kept; their script tracks
              the objects together, saves one label image per frame in which the lowest object id
              wins overlaps, and computes no score. The saved prediction file here is the merged
              label map.
        """),
    ),
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
