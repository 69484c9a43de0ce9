# The package's exports for type checkers and the API pages; at run time
# lazy_loader.attach_stub reads this file's imports (relative, one level: `from .x import
# y`) and loads each name from its module on first use. Public modules only, but for the
# exceptions.

from ._cancel import Cancelled
from ._errors import (
    GeometryMismatchError,
    InvalidImageError,
    InvalidLabelsError,
    InvalidPromptError,
    MissingDependencyError,
    ReadError,
    SegEvalError,
    WriteError,
)
from .attacks import ATTACKS, AttackConfig, DenseTarget, PromptTarget, attack_case, eps_from_raw
from .evaluation import load_layout, run_evaluation
from .evaluation.report import write_report
from .io import Case, Geometry, read_case, read_image, read_labels, write_image, write_labels
from .metrics import per_slice_dice, structure_table, worst_slice
from .models.dense import segment_case
from .models.registry import load_dense, load_promptable
from .phantoms.samples import sample_path
from .prompts import (
    Box,
    MaskPrompt,
    Point,
    PromptFile,
    PromptSet,
    boxes_from_labels,
    read_prompts,
    write_prompts,
)
from .propagation import PropagationOptions, PropagationSession, propagate_image

__version__: str

__all__ = [
    "ATTACKS",
    "AttackConfig",
    "Box",
    "Cancelled",
    "Case",
    "DenseTarget",
    "Geometry",
    "GeometryMismatchError",
    "InvalidImageError",
    "InvalidLabelsError",
    "InvalidPromptError",
    "MaskPrompt",
    "MissingDependencyError",
    "Point",
    "PromptFile",
    "PromptSet",
    "PromptTarget",
    "PropagationOptions",
    "PropagationSession",
    "ReadError",
    "SegEvalError",
    "WriteError",
    "__version__",
    "attack_case",
    "boxes_from_labels",
    "eps_from_raw",
    "load_dense",
    "load_layout",
    "load_promptable",
    "per_slice_dice",
    "propagate_image",
    "read_case",
    "read_image",
    "read_labels",
    "read_prompts",
    "run_evaluation",
    "sample_path",
    "segment_case",
    "structure_table",
    "worst_slice",
    "write_image",
    "write_labels",
    "write_prompts",
    "write_report",
]
