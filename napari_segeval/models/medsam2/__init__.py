"""MedSAM2 backend (optional extra ``medsam2``: Meta's ``sam2`` package and ``hydra-core``).

* :func:`load_medsam2` - load a ``MedSAM2_latest.pt``-style checkpoint safely and strictly.
* :class:`MedSAM2Model` - the promptable model (preprocess, propagate).
* ``sam2.1_hiera_t512.yaml`` - the project's network config.

Importing this package imports neither torch nor sam2.
"""

from napari_segeval.models.medsam2.model import MedSAM2Model, load_medsam2

__all__ = ["MedSAM2Model", "load_medsam2"]
