"""MedSAM2 and SAM2.1 backend (optional extra ``medsam2``: Meta's ``sam2`` package and ``hydra-core``).

Importing this package imports neither torch nor sam2.
"""

from napari_segeval.models.medsam2.model import MedSAM2Model, load_medsam2, load_sam2

__all__ = ["MedSAM2Model", "load_medsam2", "load_sam2"]
