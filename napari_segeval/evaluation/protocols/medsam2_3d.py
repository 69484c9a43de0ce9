"""``medsam2-3d``: box on the reference middle slice, bidirectional propagation, DSC + NSD.

The recipe (MedSAM2, Ma et al. 2025) and its options are in ``docs/protocols.md``; the
code is the promptable protocols' shared one (:mod:`._promptable`).
"""

from __future__ import annotations

from napari_segeval.evaluation.protocols import Preset
from napari_segeval.evaluation.protocols._params import paragraphs
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
DIFFERENCES = paragraphs("""
    - Dice is 2|A∩B|/(|A|+|B|), as MedSAM2's own code defines it (dice_multi_class); the evaluation
      card given to this project divides 2|A∩B| by |A∪B|, which is not Dice (recipe bug of the card,
      corrected).
    - The default model is the built-in promptable network, which needs no download; MedSAM2 itself
      runs with --param model=medsam2:CHECKPOINT.
    - Slices are resized as floating-point images; MedSAM2 converts the windowed slice to 8-bit RGB
      and resizes it with Pillow (bicubic) (resize=pillow, MedSAM2 backend).
    - CT intensities map the window edges to 0-255; MedSAM2 clips to the window and then min-max
      rescales the clipped volume, which agrees only when the volume reaches both window edges
      (ct_mapping=minmax).
    - The largest connected component uses 6-connectivity; MedSAM2 uses scikit-image's default full
      (26-) connectivity (connectivity=26).
    - Propagation in each direction stops at the first empty slice (and, for the built-in model, at
      its calibrated confidence stop); MedSAM2 propagates to the end of the volume
      (stop_when_empty=false).
    - A voxel is foreground when its probability is above 0.5; MedSAM2 thresholds the logit at 0,
      which is the same decision except where the sigmoid rounds to exactly 0.5 (decision=logit).
    - The modality is the DICOM tag, else the data set's dataset.json, else a guess from the
      intensities (a CT window when the volume is whole-numbered with a minimum at or below -500 HU,
      otherwise MR percentile clipping); MedSAM2's scripts are told the modality (modality=CT, MR,
      PET, US ... overrides).
    - Several structures are merged into one label map before scoring (the higher probability wins;
      a lesion lying at least half inside an organ wins that overlap); MedSAM2's script propagates
      each target on its own and saves one mask file per target (scoring=per-structure scores each
      structure's own mask).
    - Box jitter (only when jitter > 0) moves each edge by up to jitter pixels either way, so a box
      can shrink; MedSAM2's helper widens the box outward on all sides by one shift drawn from 0-20
      pixels (jitter_mode=outward).
    - With --model litemedsam (the MedSAM authors' LiteMedSAM, box prompts only), each slice after
      the prompted one takes the box of the previous slice's result grown by 3 pixels (the authors'
      rule), and a direction stops at the first slice whose predicted IoU falls below 0.9 times that
      of the prompted slice, because LiteMedSAM segments whatever a box holds and almost never
      returns an empty slice (the ratio was chosen on tuning phantoms); their challenge loop walks
      only the reference's z range instead (--preset cvpr24).
""")

DICE_NOTE, DEFAULT_MODEL = DIFFERENCES[:2]
#: Shared by both presets: what our MedSAM2 loop does differently from their predictor.
HOLES = (
    "Background holes of up to 8 low-resolution pixels are always filled in MedSAM2 "
    "masks; MedSAM2's predictor fills them only when SAM2's CUDA extension is "
    "installed (without it, it warns and skips the step)."
)
BUILTIN = (
    "The default model is the built-in promptable network (which ends each "
    "direction at its calibrated confidence stop, and has its own input size, so "
    "resize does not apply to it); MedSAM2 itself runs with "
    "--param model=medsam2:CHECKPOINT."
)

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
    differences=(
        DICE_NOTE,
        BUILTIN,
        HOLES,
        *paragraphs("""
            - Each structure is prompted with the tight box of the reference on the middle slice of
              its extent; their CT lesion script takes the key slice and box from DeepLesion's
              annotation table.
            - The CT window is one per run (window, default abdomen); their DeepLesion script
              applies each lesion's DICOM window from the annotation table.
            - The modality is the DICOM tag, else dataset.json, else a guess from the intensities,
              unless modality= names it; their scripts are told it.
            - Box jitter is off (jitter=0) unless asked; --param jitter=20 draws their helper's
              outward shift of 0-20 pixels.
            - Each structure is scored on its own propagated mask; their script saves one mask file
              per target and computes no score, and it does not clear its mask array between the
              targets of one image, so each file also holds the targets before it and keeps the
              largest component of that union (not followed). The saved prediction file here is the
              merged label map.
        """),
    ),
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
    differences=(
        DICE_NOTE,
        *paragraphs("""
            - Each structure's 3D box is taken from the reference labels of the case as they are;
              the challenge's data were prepared first (pre_CT_MR.py removes objects under 100
              voxels in 3D and 10 pixels per slice, and crops each volume to the slices with
              labels), which is not repeated here.
            - NSD at 2 mm uses the voxel spacing of each array axis; the challenge's metric script
              passes SimpleITK's (x, y, z) spacing with (z, y, x) arrays, which swaps the slice and
              column spacing of anisotropic volumes (recipe bug, not copied). As there, a case's NSD
              is 0 when its mean DSC is at most 0.2 (rows say nsd_gated).
            - Dice and NSD are reported per structure and summarized by median and IQR; the
              challenge averages each case over its structures first (its ranking is per case).
            - The slices are encoded once per case for all structures; the authors' script encodes
              every slice again for every box (the same numbers, computed once).
        """),
    ),
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
