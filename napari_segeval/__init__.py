"""napari-segeval: inspect and benchmark medical image segmentation, clean and attacked.

Importing this package is cheap: it never imports torch, Qt, napari, SimpleITK,
video decoders or Dask. Heavy libraries are imported inside the functions that
need them.

Public names: the project exceptions (:class:`SegEvalError` and its subclasses,
each a message a person can act on) and :class:`Cancelled`, raised by long jobs
whose cancel event was set.
"""

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

__all__ = [
    "Cancelled",
    "GeometryMismatchError",
    "InvalidImageError",
    "InvalidLabelsError",
    "InvalidPromptError",
    "MissingDependencyError",
    "ReadError",
    "SegEvalError",
    "WriteError",
    "__version__",
]
