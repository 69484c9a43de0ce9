"""Adversarial attacks and noise baselines for segmentation models.

* :mod:`.registry` - every attack by name (:data:`ATTACKS`: its loop, its
  evaluation count, its own options); adding an attack is adding an entry.
* :mod:`.config` - :class:`AttackConfig`, every parameter of one attack, checked
  against the registry; :func:`not_applicable`.
* :mod:`.core` - :func:`run_attack`, the dispatcher, on any differentiable
  ``forward(x) -> logits (N, C, *spatial)``.
* The loops, on the shared :class:`~._problem.Problem` (ball, evaluation, kept
  iterate): :mod:`.iterative` - FGSM, PGD (L-inf/L2, random start, schedule,
  restarts, SegPGD/CosPGD weighting) and noise; :mod:`.apgd` - APGD-CE/DLR;
  :mod:`.square` - Square (score-based, forward passes only); :mod:`.fab` -
  FAB-T (targeted, minimal norm). Together with PGD these are the attack suite
  of ROG (Daza et al. 2021), with its options (:class:`AttackConfig`).
* :mod:`.budget` - epsilon in normalized units and its conversion to raw units
  (HU, grey levels). Natural-image budgets such as 8/255 do not transfer.
* :mod:`.losses` - cross-entropy, soft Dice and DLR per case; the Dice that picks
  the returned iterate.
* :mod:`.dense` / :mod:`.promptable` - targets for dense models (sliding window)
  and promptable propagation (built-in model, MedSAM2).
* :mod:`.run` - :func:`attack_case`: outputs in raw units and Dice clean vs attacked.
* :mod:`.robustness` - Dice drop and the robust-case rule (threshold once per task).

The names below are loaded on first use (PEP 562), so that listing the attacks
(``ATTACKS``, as every ``segeval`` call does to build its parser) imports
neither the targets nor the metrics. Importing this package does not import torch.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

#: Public name -> the submodule that defines it.
_EXPORTS: dict[str, str] = {
    "ATTACKS": "registry",
    "Attack": "registry",
    "AttackConfig": "config",
    "AttackNotApplicable": "config",
    "not_applicable": "config",
    "run_attack": "core",
    "AttackOutput": "_problem",
    "Budget": "budget",
    "eps_from_raw": "budget",
    "eps_to_raw": "budget",
    "DenseTarget": "dense",
    "PromptTarget": "promptable",
    "AttackResult": "run",
    "attack_case": "run",
    "condition_name": "run",
    "robustness_summary": "robustness",
    "task_threshold": "robustness",
}


def _submodule(name: str) -> ModuleType:
    """The submodule ``name`` (a value of :data:`_EXPORTS`), imported on first use."""
    return importlib.import_module(f"{__name__}.{name}")


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_submodule(where), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "ATTACKS",
    "Attack",
    "AttackConfig",
    "AttackNotApplicable",
    "AttackOutput",
    "AttackResult",
    "Budget",
    "DenseTarget",
    "PromptTarget",
    "attack_case",
    "condition_name",
    "eps_from_raw",
    "eps_to_raw",
    "not_applicable",
    "robustness_summary",
    "run_attack",
    "task_threshold",
]
