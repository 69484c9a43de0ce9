"""Deterministic synthetic cases (phantoms) and the shipped sample data (numpy and scipy
only). Samples use seeds ``>= SAMPLE_SEED_BASE`` (1000), training seeds below it.
"""

#: Samples use seeds >= this value; training must use seeds below it.
SAMPLE_SEED_BASE: int = 1000

from napari_segeval.phantoms.ct import CT_STRUCTURES, make_ct_case  # noqa: E402
from napari_segeval.phantoms.echo import ECHO_STRUCTURES, make_echo_clip  # noqa: E402
from napari_segeval.phantoms.images2d import (  # noqa: E402
    POLYP_COLORS,
    POLYP_STRUCTURES,
    SKIN_STRUCTURES,
    labels_to_rgb_mask,
    make_polyp_image,
    make_skin_image,
)

__all__ = [
    "CT_STRUCTURES",
    "ECHO_STRUCTURES",
    "POLYP_COLORS",
    "POLYP_STRUCTURES",
    "SAMPLE_SEED_BASE",
    "SKIN_STRUCTURES",
    "labels_to_rgb_mask",
    "make_ct_case",
    "make_echo_clip",
    "make_polyp_image",
    "make_skin_image",
]
