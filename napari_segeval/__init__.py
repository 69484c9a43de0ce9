"""napari-segeval: inspect and benchmark medical image segmentation, clean and attacked.

Importing this package is cheap: it never imports torch, Qt, napari, SimpleITK,
video decoders or Dask. Heavy libraries are imported inside the functions that
need them.

The Python API
--------------
The functions the ``segeval`` command runs, for notebooks and pipelines. They are
loaded on first use (PEP 562), so ``import napari_segeval`` stays cheap; each is
the public function of its package, documented there.

========================  ==========================================================
read and write            :func:`read_case`, :func:`read_image`, :func:`read_labels`,
                          :func:`write_labels`, :func:`write_image`, :class:`Case`,
                          :class:`Geometry`
score                     :func:`structure_table` (Dice, IoU, precision, recall, HD95,
                          ASSD, NSD per structure), :func:`per_slice_dice`,
                          :func:`worst_slice`
prompt                    :class:`Box`, :class:`Point`, :class:`MaskPrompt`,
                          :class:`PromptSet`, :func:`boxes_from_labels`,
                          :class:`PromptFile`, :func:`read_prompts`,
                          :func:`write_prompts`
models                    :func:`load_promptable`, :func:`load_dense` (the names
                          ``segeval info`` lists)
propagate and segment     :func:`propagate_image`, :class:`PropagationOptions`,
                          :class:`PropagationSession` (corrections),
                          :func:`segment_case`
attack                    :data:`ATTACKS`, :class:`AttackConfig`,
                          :class:`PromptTarget`, :class:`DenseTarget`,
                          :func:`attack_case`, :func:`eps_from_raw`
evaluate                  :func:`load_layout` (the cases of a data-set folder),
                          :func:`run_evaluation`, :func:`write_report`
sample data               :func:`sample_path` (the bundled CT, MSD task, video ...)
========================  ==========================================================

Also here: the project exceptions (:class:`SegEvalError` and its subclasses, each
a message a person can act on), :class:`Cancelled` (raised by long jobs whose
cancel event was set) and ``__version__``.

Examples
--------
>>> import napari_segeval as se
>>> se.structure_table.__module__, se.load_promptable.__module__
('napari_segeval.metrics.table', 'napari_segeval.models.registry')
"""

from types import ModuleType
from typing import Any

from napari_segeval._cancel import Cancelled
from napari_segeval._errors import (
    GeometryMismatchError,
    InvalidImageError,
    InvalidLabelsError,
    InvalidPromptError,
    MissingDependencyError,
    ReadError,
    SegEvalError,
    WriteError,
)

__version__ = "0.1.0"

#: The Python API: name -> the public module that defines it (loaded on first use).
_API: dict[str, str] = {
    "Case": "io",
    "Geometry": "io",
    "read_case": "io",
    "read_image": "io",
    "read_labels": "io",
    "write_image": "io",
    "write_labels": "io",
    "structure_table": "metrics",
    "per_slice_dice": "metrics",
    "worst_slice": "metrics",
    "Box": "prompts",
    "Point": "prompts",
    "MaskPrompt": "prompts",
    "PromptSet": "prompts",
    "PromptFile": "prompts",
    "read_prompts": "prompts",
    "write_prompts": "prompts",
    "boxes_from_labels": "prompts",
    "load_promptable": "models.registry",
    "load_dense": "models.registry",
    "propagate_image": "propagation",
    "PropagationOptions": "propagation",
    "PropagationSession": "propagation",
    "segment_case": "models.dense",
    "ATTACKS": "attacks",
    "AttackConfig": "attacks",
    "DenseTarget": "attacks",
    "PromptTarget": "attacks",
    "attack_case": "attacks",
    "eps_from_raw": "attacks",
    "load_layout": "evaluation",
    "run_evaluation": "evaluation",
    "write_report": "evaluation.report",
    "sample_path": "phantoms.samples",
}


def __getattr__(name: str) -> Any:
    """Load an API name from its module on first use (PEP 562).

    The one place where the root imports the layers above it: lazily, public
    modules only (``tests/test_import_contract.py`` accepts exactly this).
    """
    where = _API.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module: ModuleType
    if where == "io":
        from napari_segeval import io as module
    elif where == "metrics":
        from napari_segeval import metrics as module
    elif where == "prompts":
        from napari_segeval import prompts as module
    elif where == "models.registry":
        from napari_segeval.models import registry as module
    elif where == "models.dense":
        from napari_segeval.models import dense as module
    elif where == "propagation":
        from napari_segeval import propagation as module
    elif where == "attacks":
        from napari_segeval import attacks as module
    elif where == "evaluation":
        from napari_segeval import evaluation as module
    elif where == "evaluation.report":
        from napari_segeval.evaluation import report as module
    else:
        from napari_segeval.phantoms import samples as module
    value = getattr(module, name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})


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
