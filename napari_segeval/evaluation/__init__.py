"""Headless evaluation: data-set layouts, protocols, the runner (local or Dask), reports.

Importing this package imports no heavy library (torch, dask, matplotlib).
"""

from napari_segeval.evaluation.evaluate import finalize, run_evaluation
from napari_segeval.evaluation.layouts import CaseSpec, detect_layout, load_layout
from napari_segeval.evaluation.protocols import REGISTRY, Protocol, get_protocol

__all__ = [
    "REGISTRY",
    "CaseSpec",
    "Protocol",
    "detect_layout",
    "finalize",
    "get_protocol",
    "load_layout",
    "run_evaluation",
]
