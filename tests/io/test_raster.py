import numpy as np
import pytest
import tifffile
from PIL import Image

from napari_segeval._errors import ReadError
from napari_segeval.io import read_image, read_labels


def test_rgb_png_kept(tmp_path, make):
    rgb = np.random.default_rng(0).integers(0, 255, (5, 6, 3)).astype(np.uint8)
    case = read_image(make.png(tmp_path / "polyp.png", rgb))
    assert case.axes == "yxc" and case.spacing == (1.0, 1.0) and case.modality == "endoscopy"
    assert not case.meta["has_geometry"]
    np.testing.assert_array_equal(case.image, rgb)


def test_rgba_drops_alpha_and_grey_is_yx(tmp_path, make):
    rgba = np.full((4, 4, 4), 200, np.uint8)
    assert read_image(make.png(tmp_path / "a.png", rgba)).image.shape == (4, 4, 3)
    grey = read_image(make.png(tmp_path / "g.png", np.zeros((4, 5), np.uint8)))
    assert grey.axes == "yx" and grey.image.shape == (4, 5)


def test_16bit_png_and_tiffs(tmp_path, make):
    a16 = np.arange(20, dtype=np.uint16).reshape(4, 5) * 1000
    np.testing.assert_array_equal(read_image(make.png(tmp_path / "d.png", a16)).image, a16)
    tifffile.imwrite(tmp_path / "f.tif", a16.astype(np.float32))
    assert read_image(tmp_path / "f.tif").image.dtype == np.float32
    tifffile.imwrite(tmp_path / "c.tiff", np.zeros((4, 5, 3), np.uint8))
    assert read_image(tmp_path / "c.tiff").axes == "yxc"
    tifffile.imwrite(tmp_path / "stack.tif", np.zeros((3, 4, 5), np.uint16))
    assert read_image(tmp_path / "stack.tif").axes == "zyx"


def test_jpeg(tmp_path, make):
    case = read_image(make.png(tmp_path / "x.jpg", np.full((8, 8, 3), (200, 10, 10), np.uint8)))
    assert case.axes == "yxc" and abs(int(case.image[4, 4, 0]) - 200) < 6


def test_palette_png_labels_use_indices(tmp_path):
    idx = np.array([[0, 1], [2, 2]], np.uint8)
    im = Image.fromarray(idx, mode="P")
    im.putpalette([0, 0, 0, 255, 0, 0, 0, 255, 0] + [0] * 759)
    im.save(tmp_path / "voc_mask.png")
    labels, _, _ = read_labels(tmp_path / "voc_mask.png")
    assert labels.tolist() == idx.tolist()
    assert read_image(tmp_path / "voc_mask.png").axes == "yxc"


def test_truncated_png(tmp_path, make):
    path = make.png(
        tmp_path / "t.png", np.random.default_rng(0).integers(0, 255, (32, 32, 3)).astype(np.uint8)
    )
    data = path.read_bytes()
    path.write_bytes(data[:200] + data[-12:])  # image data cut, end marker kept
    with pytest.raises(ReadError, match="t.png: cannot read image"):
        read_image(path)


def test_png_without_iend(tmp_path, make):
    path = make.png(tmp_path / "e.png", np.zeros((8, 8), np.uint8))
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(ReadError, match="no IEND"):
        read_image(path)
