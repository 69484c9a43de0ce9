"""Adversarial attacks and noise baselines for segmentation models.

Every attack is an entry of :data:`ATTACKS` (:mod:`.registry`), configured by :class:`AttackConfig`
and run on any differentiable ``forward(x) -> logits`` by :func:`run_attack`, or on a case by
:func:`attack_case`; budgets are in the model's normalized units (:mod:`.budget`). The names below
(``__init__.pyi``) load on first use (:func:`lazy_loader.attach_stub`), so listing ``ATTACKS``
imports neither the targets nor the metrics, and importing this package does not import torch.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
