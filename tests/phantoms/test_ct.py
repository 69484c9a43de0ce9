from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from napari_segeval.phantoms import CT_STRUCTURES, make_ct_case


def _core(mask: np.ndarray) -> np.ndarray:
    """Interior away from partial-volume edges (in-plane erosion)."""
    return ndimage.binary_erosion(mask, structure=np.ones((1, 3, 3), bool), iterations=1)


def test_same_seed_same_arrays_and_different_seeds_differ():
    a = make_ct_case(11, shape=(16, 48, 48))
    b = make_ct_case(11, shape=(16, 48, 48))
    c = make_ct_case(12, shape=(16, 48, 48))
    assert np.array_equal(a.image, b.image) and np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.labels, c.labels)
    assert not np.array_equal(a.image, c.image)


def test_types_axes_and_anisotropic_geometry(ct_case):
    assert ct_case.image.shape == ct_case.labels.shape == (40, 112, 112)
    assert ct_case.image.dtype == np.int16 and ct_case.labels.dtype == np.uint8
    assert ct_case.axes == "zyx" and ct_case.modality == "CT"
    assert ct_case.spacing == (2.5, 1.2, 1.2)
    # origin centres the volume: physical centre of the grid at 0 mm
    centre = ct_case.geometry.affine() @ np.array([19.5, 55.5, 55.5, 1.0])
    np.testing.assert_allclose(centre[:3], 0, atol=1e-9)


def test_label_ids_and_names(ct_case):
    assert CT_STRUCTURES == {
        1: "liver",
        2: "spleen",
        3: "kidney_right",
        4: "kidney_left",
        5: "liver_tumour",
    }
    assert ct_case.structures == CT_STRUCTURES
    assert set(np.unique(ct_case.labels).tolist()) == {0, 1, 2, 3, 4, 5}


@pytest.mark.parametrize(
    ("label", "low", "high"),
    [(1, 40, 80), (2, 35, 65), (3, 100, 180), (4, 100, 180), (5, 5, 45)],
)
def test_mean_hu_per_structure(ct_case, label, low, high):
    core = _core(ct_case.labels == label)
    assert core.sum() > 10
    assert low <= ct_case.image[core].mean() <= high


def test_background_tissues_and_bone(ct_case):
    img, lab = ct_case.image, ct_case.labels
    assert np.median(img[:, :3, :3]) < -950  # air in the corners
    assert img.max() >= 400  # bone
    assert ((img < -800) & (lab == 0))[:, 30:80, 30:80].any()  # bowel gas inside the body
    # fat exists inside the body (around -100)
    assert (np.abs(img[:, 20:90, 20:90] + 100) < 25).sum() > 500


def test_tumour_inside_liver_and_hypodense(ct_case):
    tumour = ct_case.labels == 5
    grown = ndimage.binary_dilation(tumour, iterations=1) & ~tumour
    assert tumour.any()
    assert np.isin(ct_case.labels[grown], [1, 5]).mean() > 0.8
    liver_hu = ct_case.image[_core(ct_case.labels == 1)].mean()
    assert ct_case.image[_core(tumour)].mean() < liver_hu - 15


def test_tumour_switch_leaves_anatomy_unchanged():
    with_t = make_ct_case(21, shape=(16, 48, 48), tumour=True)
    without = make_ct_case(21, shape=(16, 48, 48), tumour=False)
    assert 5 not in without.labels and without.meta["has_tumour"] is False
    same = with_t.labels != 5
    assert np.array_equal(with_t.labels[same], without.labels[same])


def test_laterality_and_slice_extent(ct_case):
    lab = ct_case.labels

    def xs(m):
        return np.nonzero(m)[2].mean()

    def zs(m):
        return np.nonzero(m)[0].mean()

    # LPS: x grows toward patient left; the liver and right kidney sit at small x
    assert xs(lab == 1) < 56 < xs(lab == 2)
    assert xs(lab == 3) < 56 < xs(lab == 4)
    # z grows toward superior: liver above kidneys; no organ spans every slice
    assert zs(lab == 1) > zs(lab == 3)
    for label in (1, 2, 3, 4):
        assert not (lab == label).any(axis=(1, 2)).all()


def test_varied_anatomy_across_seeds():
    volumes = [int((make_ct_case(s, shape=(16, 48, 48)).labels == 1).sum()) for s in (1, 2, 3)]
    assert len(set(volumes)) == 3


def test_bad_shape_rejected():
    with pytest.raises(ValueError, match="shape"):
        make_ct_case(0, shape=(4, 48, 48))
