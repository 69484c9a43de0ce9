import numpy as np
import pytest

from napari_segeval.metrics._surfel_tables import contour_length_table_2d, surfel_area_table_3d

SPACINGS = [(1.0, 1.0, 1.0), (1.5, 0.8, 0.8), (0.7, 2.3, 1.1), (3.0, 0.5, 0.9)]
RANDOM_SPACINGS = [tuple(np.random.default_rng(i).uniform(0.05, 6.0, 3)) for i in range(12)]


def code(*corners):
    """Code of the inside voxels at offsets ``corners`` (DeepMind's bit order)."""
    return sum(1 << (4 * (1 - o0) + 2 * (1 - o1) + (1 - o2)) for o0, o1, o2 in corners)


def test_known_areas_unit_spacing():
    t = surfel_area_table_3d((1.0, 1.0, 1.0))
    assert t[0] == 0 and t[255] == 0
    assert t[1] == pytest.approx(np.sqrt(3) / 8)  # one corner: triangle through 3 midpoints
    assert t[0b00001111] == pytest.approx(1.0)  # half block: flat unit square
    assert t[0b00000011] == pytest.approx(np.sqrt(2) / 2)  # one edge: slanted rectangle


def test_every_group_shape_by_hand_anisotropic():
    s0, s1, s2 = 2.0, 0.5, 0.75
    t = surfel_area_table_3d((s0, s1, s2))
    face = np.array([s1 * s2, s0 * s2, s0 * s1])  # area of a voxel face normal to each axis

    def norm(*v):
        return float(np.linalg.norm(np.array(v) * face))

    ones = (1.0, 1.0, 1.0)
    # one corner: the triangle through the midpoints of its three edges
    assert t[code((0, 0, 0))] == pytest.approx(norm(*ones) / 8, abs=1e-14)
    # two corners along axis 1: a rectangle, s1 long and half a face diagonal wide
    assert t[code((0, 0, 0), (0, 1, 0))] == pytest.approx(norm(0.5, 0, 0.5), abs=1e-14)
    # an L in the face normal to axis 2: a flat triangle plus a slanted trapezoid
    el = code((0, 0, 0), (1, 0, 0), (0, 1, 0))
    assert t[el] == pytest.approx(norm(0, 0, 0.5) + 3 * norm(*ones) / 8, abs=1e-14)
    # a face normal to axis 0: the flat square half way
    assert t[code((1, 0, 0), (1, 1, 0), (1, 0, 1), (1, 1, 1))] == pytest.approx(s1 * s2)
    # a corner with its three neighbours: a regular hexagon
    star = code((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1))
    assert t[star] == pytest.approx(3 * norm(*ones) / 4, abs=1e-14)
    # a path stepping along axes 0, 1, 2: a quadrilateral through the centre and two triangles
    zig = code((0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1))
    expected = norm(*ones) / 2 + norm(0.25, 0.25, 0) + norm(0, 0.25, 0.25)
    assert t[zig] == pytest.approx(expected, abs=1e-14)
    # two separate corners: two triangles; five inside corners: the three outside ones
    assert t[code((0, 0, 0), (1, 1, 1))] == pytest.approx(2 * t[1], abs=1e-14)
    assert t[255 - el] == t[el]


def test_complement_symmetry():
    t = surfel_area_table_3d((1.5, 0.8, 0.8))
    np.testing.assert_allclose(t, t[::-1])


@pytest.mark.parametrize("spacing", SPACINGS + RANDOM_SPACINGS)
def test_equals_deepmind_tables(deepmind, spacing):
    from surface_distance import lookup_tables as lt

    np.testing.assert_allclose(
        surfel_area_table_3d(spacing),
        lt.create_table_neighbour_code_to_surface_area(spacing),
        rtol=0,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        contour_length_table_2d(spacing[:2]),
        lt.create_table_neighbour_code_to_contour_length(spacing[:2]),
        rtol=0,
        atol=1e-12,
    )


def test_anisotropic_half_block_area():
    # the flat square perpendicular to axis 0 has area s1*s2
    t = surfel_area_table_3d((3.0, 0.5, 0.9))
    assert t[0b00001111] == pytest.approx(0.5 * 0.9)
    assert contour_length_table_2d((3.0, 0.5))[0b0011] == pytest.approx(0.5)
