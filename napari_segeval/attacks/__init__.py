"""Adversarial attacks and noise baselines for segmentation models.

* :mod:`.budget` - epsilon in normalized units and its conversion to raw units
  (HU, grey levels). Natural-image budgets such as 8/255 do not transfer.
* :mod:`.core` - FGSM, PGD (L-inf/L2, random start, schedule, restarts,
  SegPGD/CosPGD weighting) and noise on any differentiable
  ``forward(x) -> logits (N, C, *spatial)``; :mod:`.apgd` - APGD-CE/DLR;
  :mod:`.square` - Square (score-based, forward passes only); :mod:`.fab` -
  FAB-T (targeted, minimal norm). Together with PGD these are the attack suite
  of ROG (Daza et al. 2021), with its options (:class:`AttackConfig`).
* :mod:`.losses` - cross-entropy, soft Dice and DLR per case; the Dice that picks
  the returned iterate.
* :mod:`.dense` / :mod:`.promptable` - targets for dense models (sliding window)
  and promptable propagation (built-in model, MedSAM2).
* :mod:`.run` - :func:`attack_case`: outputs in raw units and Dice clean vs attacked.
* :mod:`.robustness` - Dice drop and the robust-case rule (threshold once per task).

Importing this package does not import torch.
"""

from __future__ import annotations

from napari_segeval.attacks.apgd import apgd_checkpoints
from napari_segeval.attacks.budget import Budget, eps_from_raw, eps_to_raw
from napari_segeval.attacks.core import (
    ATTACKS,
    SCHEDULES_BY_ATTACK,
    AttackConfig,
    AttackNotApplicable,
    AttackOutput,
    not_applicable,
    per_case_norm,
    run_attack,
)
from napari_segeval.attacks.dense import DenseTarget
from napari_segeval.attacks.promptable import PromptTarget
from napari_segeval.attacks.robustness import robustness_summary, task_threshold
from napari_segeval.attacks.run import AttackResult, attack_case, condition_name

__all__ = [
    "ATTACKS",
    "SCHEDULES_BY_ATTACK",
    "AttackConfig",
    "AttackNotApplicable",
    "AttackOutput",
    "AttackResult",
    "Budget",
    "DenseTarget",
    "PromptTarget",
    "apgd_checkpoints",
    "attack_case",
    "condition_name",
    "eps_from_raw",
    "eps_to_raw",
    "not_applicable",
    "per_case_norm",
    "robustness_summary",
    "run_attack",
    "task_threshold",
]
