"""The ``rog`` preset of ``msd-robust``: Daza et al. 2021 and its code (BCV-Uniandes/ROG),
described in ``docs/protocols.md``; :data:`ROG_ATTACKS` is the one place listing its attacks.
"""

from __future__ import annotations

from napari_segeval.evaluation.protocols import Preset
from napari_segeval.evaluation.protocols._params import paragraphs

#: Their budget: ``--eps 8`` divided by 255, in the network's normalized (z-scored) units.
ROG_EPS = 8 / 255

_COMMON = {"eps": ROG_EPS, "steps": 5, "reference": "labels"}

#: ROG's attack suite, in their order (``main.py``), each attack once.
ROG_ATTACKS = [
    {"name": "apgd-ce", **_COMMON, "restarts": 5, "step_size": 2 * ROG_EPS, "schedule": "rog"},
    {"name": "pgd", **_COMMON, "restarts": 5, "step_size": ROG_EPS / 3, "select": "loss"},
    {"name": "fab", **_COMMON, "restarts": 5},
    {
        "name": "square",
        **_COMMON,
        "restarts": 1,
        "p_init": 0.8,
        "loss": "hard-dice",
        "schedule": "absolute",
    },
    {"name": "apgd-dlr", **_COMMON, "restarts": 5, "step_size": 2 * ROG_EPS, "schedule": "rog"},
]

#: Every deliberate difference between the preset and ROG's paper and code (docs/protocols.md).
ROG_DIFFERENCES = paragraphs("""
    - Attacks run on the whole volume through the Gaussian sliding window, not on the one patch
      their code crops around each case's label centre of mass; clean and attacked Dice are both
      scored on the whole case.
    - Perturbed inputs are clamped to the intensity range the preprocessing produces, each channel
      to its own, not to [0, 1]: their code clamps z-scored inputs to [0, 1], which destroys the
      clean image itself (recipe bug, corrected).
    - The robust threshold (0.5 x the task's mean clean Dice) is computed once, from a clean pass
      before any attack; their code re-multiplies it by the mean clean Dice on every attack call,
      compounding it (recipe bug, corrected).
    - Each attack of the suite runs once; on tasks with 3 or more classes their list names PGD, FAB
      and Square twice, and the second runs, under the compounded threshold, overwrite the first.
    - PGD keeps, per case, the restart whose final perturbation has the highest mean cross-entropy;
      their code splices the restarts voxel by voxel (the highest per-voxel cross-entropy), a
      perturbation that was never evaluated as a whole.
    - Which cases an attack runs on, and restarts on, is decided by the Dice the attack measures on
      the network's grid before post-processing, against the threshold from the scored clean Dice
      (case grid, post-processed); their code measures both on the cropped patch without
      post-processing.
    - Random starts and squares use a fixed seed (0), so that a run can be repeated; their code
      seeds with the clock.
    - APGD checks its step size where their code checks it, but keeps the paper's rule at each
      check: their code compares the first iterate's loss with 0 at the first check (a wrap-around
      index into a loss array not yet filled), never applies the no-improvement condition at the
      first check, and after a step-size reduction keeps momentum from the iterate before the
      restart point; the paper restarts from the best point without momentum.
    - Square keeps their stripes (constant along the first axis of their nibabel arrays, x, the last
      axis of this project's (z, y, x) arrays) and their square-size schedule, but draws one window
      position per case (theirs one per batch), clips the window to each axis (their randint(0, d -
      s) never reaches the last position and turns negative for a cube deeper than the volume),
      makes one forward pass per query (theirs three) and stops querying a case at a Dice at or
      below the threshold (theirs strictly below).
    - FAB keeps the smallest successful perturbation over all its runs (theirs the first within
      eps), counts a Dice at or below the threshold as success (theirs strictly below) and solves
      the projection onto the linearized boundary exactly (theirs by bisection of the same problem).
    - Dice is scored on each case's original grid (the prediction resampled back, every slice kept);
      their code scores in the resampled space and first crops volumes of more than 300 slices
      around the foreground.
    - Post-processing follows the paper: the largest component of each organ is kept and lesion
      components smaller than a threshold are fused into the structure they touch most (removed when
      they touch none); the threshold is nnU-Net v1's rule learned from the training labels, because
      the paper gives none, and their released code applies no post-processing.
    - MR min-max scaling is per image and channel after resampling, as their preprocessing applies
      it; the clip bounds, mean and standard deviation are the model's own (its plans), whereas
      their statistics script min-max scales all channels of an image together and takes the clip
      bounds from per-class percentiles.
    - MR min-max scaling (mr_minmax=true) is applied to every model as their code does, but a model
      whose plans do not say that its statistics are in min-max units is named in summary.json
      (mr_minmax_note) and in its cases' records: such statistics (nnU-Net's, for one) are in raw
      units, and --param mr_minmax=null keeps the model's own normalization.
    - Every case with reference labels in the data set given is evaluated; ROG reports its fold-0
      validation cases (the lists in its Tasks folder): give those cases to compare.
    - The network is the one given with --param model= (the built-in 3D U-Net by default), not ROG:
      Dice values are comparable with the paper only for the same network.
""")

ROG = Preset(
    name="rog",
    params={
        "attacks": ROG_ATTACKS,
        "gate": True,
        "robust_factor": 0.5,
        "mr_minmax": True,
        "lesion_mode": "merge",
        "postprocess": True,
        "overlap": 0.5,
        "mirror": False,
        "channel": None,
        "empty": "one",
    },
    source=(
        "Daza et al., Towards Robust General Medical Image Segmentation, MICCAI 2021 "
        "(arXiv 2107.04263), and its code BCV-Uniandes/ROG"
    ),
    differences=ROG_DIFFERENCES,
)
