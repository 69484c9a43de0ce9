from __future__ import annotations

import numpy as np
import pytest

from napari_segeval.phantoms import (
    POLYP_COLORS,
    POLYP_STRUCTURES,
    SKIN_STRUCTURES,
    labels_to_rgb_mask,
    make_polyp_image,
    make_skin_image,
)


@pytest.mark.parametrize("make", [make_polyp_image, make_skin_image])
def test_determinism_and_variation(make):
    a, b, c = make(5), make(5), make(6)
    assert np.array_equal(a.image, b.image) and np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.image, c.image)


def test_polyp_image():
    for seed in range(1000, 1006):
        case = make_polyp_image(seed)
        assert case.image.shape == (128, 160, 3) and case.image.dtype == np.uint8
        assert case.axes == "yxc" and case.modality == "endoscopy"
        assert case.structures == POLYP_STRUCTURES == {1: "neoplastic", 2: "non_neoplastic"}
        assert case.labels.shape == (128, 160) and case.labels.any()
        assert set(np.unique(case.labels).tolist()) <= {0, 1, 2}
        mucosa = case.image[40:90, 40:120][case.labels[40:90, 40:120] == 0].mean(axis=0)
        assert mucosa[0] > mucosa[1] and mucosa[0] > mucosa[2]  # reddish
        assert (case.image[0, 0] < 20).all()  # black endoscope corner


def test_both_polyp_classes_occur():
    seen = set()
    for seed in range(1000, 1012):
        seen |= set(np.unique(make_polyp_image(seed, shape=(64, 80)).labels).tolist())
    assert {1, 2} <= seen


def test_skin_image():
    case = make_skin_image(1000)
    assert case.image.shape == (128, 160, 3) and case.modality == "dermoscopy"
    assert case.structures == SKIN_STRUCTURES == {1: "lesion"}
    lesion, skin = case.labels == 1, case.labels == 0
    assert 0.05 < lesion.mean() < 0.6
    assert case.image[lesion].mean() < case.image[skin].mean() - 40  # pigmented


def test_labels_to_rgb_mask():
    labels = np.array([[0, 1], [2, 1]], np.uint8)
    rgb = labels_to_rgb_mask(labels)
    assert rgb.dtype == np.uint8 and rgb.shape == (2, 2, 3)
    assert tuple(rgb[0, 1]) == POLYP_COLORS[1] == (255, 0, 0)
    assert tuple(rgb[1, 0]) == POLYP_COLORS[2] == (0, 255, 0)
    assert tuple(rgb[0, 0]) == (0, 0, 0)
    custom = labels_to_rgb_mask(labels, {1: (1, 2, 3), 2: (4, 5, 6)})
    assert tuple(custom[1, 1]) == (1, 2, 3)
    with pytest.raises(ValueError, match=r"\[2\]"):
        labels_to_rgb_mask(labels, {1: (255, 0, 0)})
