"""Generated objects and scenes: every family draws, scenes are consistent and reproducible."""

import numpy as np
import pytest
from scipy import ndimage

from napari_segeval.training import shapes


@pytest.mark.parametrize("family", shapes.TRAIN_SHAPES + shapes.HELDOUT_SHAPES)
def test_every_family_draws_one_connected_object_that_ends_inside_the_stack(family):
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(6):
        m = shapes.draw_object(rng, family, (30, 96, 96), radius=14)
        if not m.any():
            continue
        found += 1
        assert ndimage.label(m)[1] == 1
        zs = np.nonzero(m.any(axis=(1, 2)))[0]
        assert zs.size < 30  # it begins and/or ends inside the stack
    assert found >= 4


def test_families_differ_in_shape():
    rng = np.random.default_rng(0)

    def solidity(family):
        vals = []
        for _ in range(8):
            m = shapes.draw_object(rng, family, (16, 96, 96), radius=18)
            z = int(np.argmax(m.sum(axis=(1, 2))))
            sl = m[z]
            if sl.sum() < 30:
                continue
            ys, xs = np.nonzero(sl)
            box = (ys.max() - ys.min() + 1) * (xs.max() - xs.min() + 1)
            vals.append(sl.sum() / box)
        return np.median(vals)

    # thin curves fill little of their box; ellipses about pi/4 of it
    assert solidity("thin") < 0.5 < solidity("ellipsoid") < 0.85


def test_thin_objects_are_thin():
    rng = np.random.default_rng(1)
    m = shapes.draw_object(rng, "thin", (12, 96, 96), radius=20)
    depth = max(ndimage.distance_transform_edt(s).max() for s in m if s.any())
    assert depth <= 5


def test_scene_is_reproducible_and_consistent():
    a = shapes.make_scene(np.random.default_rng(7), (12, 64, 64))
    b = shapes.make_scene(np.random.default_rng(7), (12, 64, 64))
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.classes, b.classes)
    ids = np.unique(a.labels)
    assert ids.tolist() == list(range(len(a.families) + 1))  # consecutive, one family each
    assert a.classes.max() < a.n_classes
    for k in ids[1:]:
        assert (a.labels == k).sum() >= shapes.MIN_VOXELS
        # an object's classes are its own: no background class inside it
        assert set(np.unique(a.classes[a.labels == k])).isdisjoint(
            np.unique(a.classes[a.labels == 0])
        )


def test_two_dimensional_scene():
    s = shapes.make_scene(np.random.default_rng(2), (1, 64, 64), n_objects=(3, 3))
    assert s.labels.shape == (1, 64, 64) and s.labels.max() >= 1


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="unknown shape family"):
        shapes.draw_object(np.random.default_rng(0), "torus", (8, 32, 32))


def test_training_never_draws_held_out_families():
    assert set(shapes.TRAIN_SHAPES).isdisjoint(shapes.HELDOUT_SHAPES)
    rng = np.random.default_rng(0)
    fams = set()
    for _ in range(10):
        fams.update(shapes.make_scene(rng, (8, 48, 48)).families)
    assert fams <= set(shapes.TRAIN_SHAPES)
