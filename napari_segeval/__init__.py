"""napari-segeval: inspect and benchmark medical image segmentation, clean and attacked.

``import napari_segeval`` stays cheap (no torch, Qt, napari, SimpleITK): the Python API
named in ``__init__.pyi`` (see docs/api/index.md) is loaded from its modules on first
use. Also here: the project exceptions (:class:`SegEvalError` and its subclasses),
:class:`Cancelled` and ``__version__``.
"""

import lazy_loader as _lazy

__version__ = "0.1.0"

# the exceptions load lazily too (importing them costs nothing either way)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__all__ += ["__version__"]
