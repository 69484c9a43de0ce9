"""napari sample-data contributions open the bundled phantoms with geometry and names."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval import _sample_data


@pytest.mark.parametrize(
    ("func", "ndim", "rgb", "names"),
    [
        (_sample_data.sample_ct, 3, False, {"liver", "spleen", "kidney_right"}),
        (_sample_data.sample_video, 3, False, {"lv_cavity", "myocardium", "left_atrium"}),
        (_sample_data.sample_polyp, 2, True, {"neoplastic", "non_neoplastic"}),
        (_sample_data.sample_skin, 2, True, {"lesion"}),
    ],
)
def test_sample_layers(func, ndim, rgb, names):
    (image, ikw, itype), (labels, lkw, ltype) = func()
    assert (itype, ltype) == ("image", "labels")
    assert ikw["rgb"] is rgb
    assert labels.ndim == ndim
    assert image.shape[:ndim] == labels.shape
    assert np.issubdtype(labels.dtype, np.integer)
    assert names <= set(lkw["metadata"]["structures"].values())
    assert lkw["scale"] == ikw["scale"]
    present = set(np.unique(labels)) - {0}
    assert present, "reference labels are empty"


def test_ct_sample_in_viewer(make_napari_viewer):
    viewer = make_napari_viewer()
    layers = viewer.open_sample("napari-segeval", "ct")
    image, labels = layers
    assert image.scale[0] == pytest.approx(2.5)
    assert tuple(labels.scale) == tuple(image.scale)
    assert "liver" in list(labels.features["name"])
