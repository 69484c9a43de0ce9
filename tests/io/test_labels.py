import numpy as np
import pytest

from napari_segeval._errors import InvalidLabelsError
from napari_segeval.io import read_labels
from napari_segeval.io._labels import apply_color_table, binary_255_to_1, parse_color_table

NEOPOLYP = {(255, 0, 0): (1, "neoplastic"), (0, 255, 0): (2, "non-neoplastic")}


def _neopolyp_mask() -> tuple[np.ndarray, np.ndarray]:
    ids = np.zeros((48, 64), np.uint8)
    ids[8:24, 8:30] = 1
    ids[28:44, 36:60] = 2
    rgb = np.zeros((48, 64, 3), np.uint8)
    rgb[ids == 1] = (255, 0, 0)
    rgb[ids == 2] = (0, 255, 0)
    return ids, rgb


def test_jpeg_colour_mask_maps_with_noise(tmp_path, make):
    ids, rgb = _neopolyp_mask()
    path = make.png(tmp_path / "polyp_mask.jpeg", rgb, quality=75)
    labels, geometry, names = read_labels(path, color_table=NEOPOLYP)
    assert names == {1: "neoplastic", 2: "non-neoplastic"}
    assert geometry.spacing == (1.0, 1.0)
    inner = np.zeros_like(ids, bool)
    inner[10:22, 10:28] = inner[30:42, 38:58] = True
    np.testing.assert_array_equal(labels[inner], ids[inner])
    assert (labels != ids).mean() < 0.02  # JPEG blur only at block edges


def test_far_colour_is_an_error(tmp_path, make):
    _, rgb = _neopolyp_mask()
    rgb[0, 0] = (0, 0, 255)
    with pytest.raises(InvalidLabelsError, match=r"m.png: 1 pixels .*\(0, 0, 255\)"):
        read_labels(make.png(tmp_path / "m.png", rgb), color_table=NEOPOLYP)


def test_rgb_mask_without_table_is_an_error(tmp_path, make):
    _, rgb = _neopolyp_mask()
    with pytest.raises(InvalidLabelsError, match="needs a colour table"):
        read_labels(make.png(tmp_path / "m.png", rgb))


def test_isic_binary_mask(tmp_path, make):
    m = np.zeros((5, 5), np.uint8)
    m[1:4, 1:4] = 255
    labels, _, _ = read_labels(make.png(tmp_path / "ISIC_0000000_segmentation.png", m))
    assert labels.sum() == 9 and labels.max() == 1


def test_grey_table_and_tolerance():
    labels, _ = apply_color_table(np.array([[3, 250], [128, 0]], np.uint8), {255: 1}, "g.png")
    assert labels.tolist() == [[0, 1], [1, 0]]  # 128 is nearer 255 than 0 by one level
    with pytest.raises(InvalidLabelsError):
        apply_color_table(np.array([[128]], np.uint8), {255: 1}, "g.png", tolerance=10)


def test_parse_table_errors():
    with pytest.raises(InvalidLabelsError, match="RGB triples or grey"):
        parse_color_table({(1, 2): 1})
    with pytest.raises(InvalidLabelsError, match="negative"):
        parse_color_table({(1, 2, 3): -1})


def test_binary_rule_leaves_other_masks():
    assert binary_255_to_1(np.array([0, 255, 1], np.uint8)).tolist() == [0, 255, 1]


@pytest.mark.parametrize("channels, dtype", [(3, np.uint8), (1, np.uint8), (3, np.uint16)])
def test_unique_rows_matches_numpy_row_unique(channels, dtype):
    from napari_segeval.io._labels import _unique_rows

    rng = np.random.default_rng(channels)
    flat = rng.integers(0, 6, (500, channels)).astype(dtype) * 50
    unique, inverse = _unique_rows(flat)
    expected, expected_inverse = np.unique(flat, axis=0, return_inverse=True)
    np.testing.assert_array_equal(unique, expected)
    np.testing.assert_array_equal(inverse.ravel(), expected_inverse.ravel())
    np.testing.assert_array_equal(unique[inverse.ravel()], flat)
