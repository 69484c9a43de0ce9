"""Box geometry: axis order and inclusive-exclusive bounds are pinned here."""

import numpy as np
import pytest

from napari_segeval.prompts.box import Box


def test_from_mask_is_tight_and_exclusive():
    m = np.zeros((10, 12), bool)
    m[3:7, 2:9] = True
    b = Box.from_mask(m, index=5, label=3)
    assert (b.y0, b.x0, b.y1, b.x1, b.index, b.label) == (3, 2, 7, 9, 5, 3)
    assert np.array_equal(b.to_mask(m.shape), m)


def test_empty_box_and_empty_mask_raise():
    with pytest.raises(ValueError):
        Box(3, 3, 3, 5)
    with pytest.raises(ValueError, match="empty"):
        Box.from_mask(np.zeros((4, 4), bool))


def test_napari_vertices_are_z_y_x_pixel_centres():
    b = Box(2, 3, 6, 9, index=4, label=1)
    v = b.to_napari()
    assert v.shape == (4, 3)
    assert np.all(v[:, 0] == 4)  # slice index first
    assert v[:, 1].min() == 2 and v[:, 1].max() == 5  # y corners: y0 and y1 - 1
    assert v[:, 2].min() == 3 and v[:, 2].max() == 8  # x corners: x0 and x1 - 1
    assert Box.from_napari(v, label=1) == b
    assert Box.from_napari(b.to_napari(ndim=2), index=4) == b


def test_from_napari_freehand_rectangle_covers_centres_inside():
    v = np.array([[7, 1.3, 2.2], [7, 1.3, 5.9], [7, 4.6, 5.9], [7, 4.6, 2.2]])
    b = Box.from_napari(v)
    assert (b.index, b.y0, b.x0, b.y1, b.x1) == (7, 2, 3, 5, 6)


def test_jitter_is_seeded_bounded_and_clipped():
    b = Box(0, 5, 4, 10)
    j1 = b.jittered(3, np.random.default_rng(7), (8, 12))
    j2 = b.jittered(3, np.random.default_rng(7), (8, 12))
    assert j1 == j2
    many = [b.jittered(3, np.random.default_rng(s), (8, 12)) for s in range(50)]
    assert any(m != b for m in many)
    for m in many:
        assert 0 <= m.y0 < m.y1 <= 8 and 0 <= m.x0 < m.x1 <= 12
        assert abs(m.x0 - 5) <= 3 and abs(m.y1 - 4) <= 3


def test_outward_jitter_is_medsam2s_mask2d_to_bbox():
    """One shift s in [0, max_shift] widens all four sides (inclusive maxima clipped to
    H-1/W-1 there, exclusive ones to H/W here)."""
    import numpy as np

    from napari_segeval.prompts.box import Box

    shape = (40, 50)
    shifts = set()
    for seed in range(60):
        b = Box(3, 30, 12, 48, index=2, label=4)
        got = b.jittered(20, np.random.default_rng(seed), shape, "outward")
        s = int(np.random.default_rng(seed).integers(0, 21))
        shifts.add(s)
        # MedSAM2: x_min = max(0, x_min - s); x_max = min(W - 1, x_max + s) (inclusive)
        want = (max(0, 3 - s), max(0, 30 - s), min(39, 11 + s) + 1, min(49, 47 + s) + 1)
        assert (got.y0, got.x0, got.y1, got.x1) == want
        assert got.y0 <= b.y0 and got.x0 <= b.x0 and got.y1 >= b.y1 and got.x1 >= b.x1
        assert (got.index, got.label) == (2, 4)
    assert min(shifts) <= 2 and max(shifts) >= 18
    assert Box(3, 3, 9, 9).jittered(0, np.random.default_rng(0), shape, "outward") == Box(
        3, 3, 9, 9
    )
