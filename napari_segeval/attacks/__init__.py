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

The names below (``__init__.pyi`` imports them, for type checkers and the API
pages) are loaded on first use by :func:`lazy_loader.attach_stub` (PEP 562), so that
listing the attacks (``ATTACKS``, as every ``segeval`` call does to build its parser)
imports neither the targets nor the metrics. Importing this package does not import
torch.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
