"""napari-segeval: inspect and benchmark medical image segmentation, clean and attacked.

Importing this package is cheap: it never imports torch, Qt, napari, SimpleITK,
video decoders or Dask. Heavy libraries are imported inside the functions that
need them.
"""

from napari_segeval._errors import (
    GeometryMismatchError,
    InvalidImageError,
    InvalidLabelsError,
    MissingDependencyError,
    ReadError,
    SegEvalError,
    WriteError,
)

__version__ = "0.1.0"

__all__ = [
    "GeometryMismatchError",
    "InvalidImageError",
    "InvalidLabelsError",
    "MissingDependencyError",
    "ReadError",
    "SegEvalError",
    "WriteError",
    "__version__",
]
