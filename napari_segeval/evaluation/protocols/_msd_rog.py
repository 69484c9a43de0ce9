"""The ``rog`` preset of ``msd-robust``: Daza et al. 2021 and its code (BCV-Uniandes/ROG),
described in ``docs/protocols.md``; :data:`ROG_ATTACKS` is the one place listing its attacks.
"""

from __future__ import annotations

from napari_segeval.evaluation.protocols import Preset
from napari_segeval.evaluation.protocols._params import differences

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
    differences=differences("msd-robust rog"),
)
