import numpy as np
import pytest

from napari_segeval.metrics._surfel_tables import contour_length_table_2d, surfel_area_table_3d

SPACINGS = [(1.0, 1.0, 1.0), (1.5, 0.8, 0.8), (0.7, 2.3, 1.1), (3.0, 0.5, 0.9)]


def test_known_areas_unit_spacing():
    t = surfel_area_table_3d((1.0, 1.0, 1.0))
    assert t[0] == 0 and t[255] == 0
    assert t[1] == pytest.approx(np.sqrt(3) / 8)  # one corner: triangle through 3 midpoints
    assert t[0b00001111] == pytest.approx(1.0)  # half block: flat unit square
    assert t[0b00000011] == pytest.approx(np.sqrt(2) / 2)  # one edge: slanted rectangle


def test_complement_symmetry():
    t = surfel_area_table_3d((1.5, 0.8, 0.8))
    np.testing.assert_allclose(t, t[::-1])


@pytest.mark.parametrize("spacing", SPACINGS)
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
