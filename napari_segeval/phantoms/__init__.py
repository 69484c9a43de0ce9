"""Deterministic synthetic cases (phantoms) and the shipped sample data.

A layer of its own: phantoms sit above :mod:`napari_segeval.io` (they build its
:class:`~napari_segeval.io.case.Case` and :class:`~napari_segeval.io.case.Geometry`
and encode files with its conventions) and below :mod:`napari_segeval.models` and
the training scripts, which train the built-in models on them. The runtime
(models, propagation, attacks, evaluation) never needs them; the napari sample
entry point, docstring examples and the tests use them for cases with a known
answer.

Generators return :class:`~napari_segeval.io.case.Case` objects with reference labels:

* :func:`make_ct_case` — abdominal CT in HU (liver, spleen, kidneys, liver tumour);
* :func:`make_echo_clip` — apical echocardiography clip (LV, myocardium, LA);
* :func:`make_polyp_image` and :func:`make_skin_image` — RGB endoscopy / dermoscopy.

Seed policy: the shipped samples use seeds ``>= SAMPLE_SEED_BASE`` (1000); training
scripts must use seeds below it, so the samples are held out from every built-in model.
Only numpy and scipy are imported here.
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
