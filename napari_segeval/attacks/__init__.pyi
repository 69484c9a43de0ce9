# The package's exports for type checkers and the API pages; at run time
# lazy_loader.attach_stub reads this file's imports and loads each name on first use.

from ._problem import AttackOutput
from .budget import Budget, eps_from_raw, eps_to_raw
from .config import AttackConfig, AttackNotApplicable, not_applicable
from .core import run_attack
from .dense import DenseTarget
from .promptable import PromptTarget
from .registry import ATTACKS, Attack
from .robustness import robustness_summary, task_threshold
from .run import AttackResult, attack_case, condition_name

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
