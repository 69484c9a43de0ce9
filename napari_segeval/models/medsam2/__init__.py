"""MedSAM2 and SAM2.1 backend (optional extra ``medsam2``: Meta's ``sam2`` package and ``hydra-core``).

* :func:`load_medsam2` - load a ``MedSAM2_latest.pt``-style checkpoint safely and strictly.
* :func:`load_sam2` - the same for any network of ``_build.ARCHITECTURES`` (MedSAM2,
  SAM2.1 tiny, small, base-plus, large).
* :class:`MedSAM2Model` - the promptable model (preprocess, propagate).
* ``sam2.1_hiera_t512.yaml`` - the project's MedSAM2 network config (SAM2.1's come
  from Meta's ``sam2`` package).

Importing this package imports neither torch nor sam2.
"""

from napari_segeval.models.medsam2._load import load_medsam2, load_sam2
from napari_segeval.models.medsam2.model import MedSAM2Model

__all__ = ["MedSAM2Model", "load_medsam2", "load_sam2"]
