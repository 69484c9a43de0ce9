"""Real anatomy that ships in a registry package: the MNI152 2009a T1 template (nilearn).

nilearn's wheel carries the ICBM 2009a nonlinear symmetric template (1 mm, skull-stripped
T1, ``mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz``) and its grey- and white-matter
probability maps, averaged over 152 adult brains (Fonov et al., NeuroImage 2011). The
reference structures are derived from the maps (a fixed rule, no tuning):

* 1 ``white_matter``: white matter probability above 0.5;
* 2 ``left_lateral_ventricle``, 3 ``right_lateral_ventricle``: the two largest pieces,
  left and right of the midline, of the fluid (grey + white matter probability below
  0.3) enclosed by brain (probability above 0.5) on an axial slice (holes of the slice's
  brain mask), taken in 3D.

:func:`mni_case` reads them from the installed package (``importlib``, no download).
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

import numpy as np

FILES = {
    "t1": "mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz",
    "gm": "mni_icbm152_gm_tal_nlin_sym_09a_converted.nii.gz",
    "wm": "mni_icbm152_wm_tal_nlin_sym_09a_converted.nii.gz",
}
STRUCTURES = {1: "white_matter", 2: "left_lateral_ventricle", 3: "right_lateral_ventricle"}


def data_dir() -> Path | None:
    """nilearn's data folder, or None when nilearn is not installed."""
    spec = importlib.util.find_spec("nilearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(spec.submodule_search_locations[0]) / "datasets" / "data"


@lru_cache(maxsize=1)
def mni_case():
    """The template as a :class:`~napari_segeval.io.Case` (modality MR) with the labels above."""
    from dataclasses import replace

    from scipy import ndimage as ndi

    from napari_segeval.io import read_case

    d = data_dir()
    t1 = read_case(d / FILES["t1"])
    gm = read_case(d / FILES["gm"]).image.astype(np.float32) / 255
    wm = read_case(d / FILES["wm"]).image.astype(np.float32) / 255
    tissue = gm + wm
    brain = tissue > 0.5
    labels = np.zeros(brain.shape, np.uint8)
    labels[wm > 0.5] = 1
    fluid = np.zeros_like(brain)
    for z in range(brain.shape[0]):
        fluid[z] = ndi.binary_fill_holes(brain[z]) & (tissue[z] < 0.3)
    pieces, n = ndi.label(fluid)
    sizes = ndi.sum(fluid, pieces, range(1, n + 1))
    mid = brain.shape[2] / 2
    found = {}
    for k in np.argsort(sizes)[::-1] + 1:  # largest first: one piece each side
        x = np.nonzero(pieces == k)[2].mean()
        side = _side(t1, x, mid)
        if side not in found and abs(x - mid) > 5:
            found[side] = k
        if len(found) == 2:
            break
    for side, k in found.items():
        labels[pieces == k] = 2 if side == "left" else 3
    return replace(t1, modality="MR", labels=labels, structures=dict(STRUCTURES), labels_path=None)


def _side(case, x: float, mid: float) -> str:
    """``"left"`` or ``"right"`` (the patient's) of array column ``x``, from the geometry
    (LPS: +x is the patient's left)."""
    d = np.asarray(case.geometry.direction, float).reshape(3, 3)
    # array axis 2 (x) -> LPS direction column 0 of the (x, y, z) ordered direction
    lps_x = d[0, 0] if d.shape == (3, 3) else 1.0
    return "left" if (x - mid) * lps_x > 0 else "right"
