import sys

import numpy as np
import pytest

from napari_segeval._errors import MissingDependencyError, ReadError
from napari_segeval.io import read_image, read_labels
from napari_segeval.io._raster import to_grey_if_equal

pytest.importorskip("av")


@pytest.mark.parametrize("ext", [".mp4", ".avi"])
def test_colour_video(tmp_path, make, ext):
    frames = make.blocks()
    case = read_image(make.video(tmp_path / f"clip{ext}", frames, fps=12))
    assert case.axes == "tyxc" and case.image.shape == frames.shape and case.image.dtype == np.uint8
    assert case.meta["fps"] == pytest.approx(12)
    assert case.modality == "endoscopy"
    # flat blocks survive near-lossless coding to within a few grey levels
    assert np.abs(case.image.astype(int) - frames).mean() < 4


def test_grey_video_is_tyx_ultrasound(tmp_path, make):
    grey = np.zeros((3, 32, 48), np.uint8)
    grey[:, 8:24, 8:40] = np.array([60, 120, 180], np.uint8)[:, None, None]
    case = read_image(make.video(tmp_path / "echo.mp4", np.repeat(grey[..., None], 3, -1)))
    assert case.axes == "tyx" and case.modality == "US" and case.image.shape == (3, 32, 48)
    assert np.abs(case.image.astype(int) - grey).mean() < 3


def test_missing_av_gives_missing_dependency(tmp_path, make, monkeypatch):
    path = make.video(tmp_path / "a.mp4", make.blocks(2))
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(MissingDependencyError, match=r"napari-segeval\[video\]"):
        read_image(path)


@pytest.mark.parametrize("ext", [".mp4", ".avi"])
def test_truncated_video(tmp_path, make, ext):
    path = make.video(tmp_path / f"t{ext}", make.blocks(8))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReadError, match=f"t{ext}"):
        read_image(path)


def test_frame_folder_natural_order(tmp_path, make):
    folder = tmp_path / "frames"
    folder.mkdir()
    for i in (10, 2, 1):
        make.png(folder / f"frame{i}.png", np.full((6, 7), i, np.uint8))
    case = read_image(folder)
    assert case.axes == "tyx" and case.image[:, 0, 0].tolist() == [1, 2, 10]
    assert case.meta["frames"] == ["frame1.png", "frame2.png", "frame10.png"]


def test_frame_folder_colour_and_grey_rgb(tmp_path, make):
    colour, grey = tmp_path / "colour", tmp_path / "grey"
    colour.mkdir(), grey.mkdir()
    for i in range(3):
        make.png(colour / f"{i}.png", make.blocks(1)[0])
        make.png(grey / f"{i}.png", np.full((4, 5, 3), 9 * i, np.uint8))
    assert read_image(colour).axes == "tyxc"
    assert read_image(grey).axes == "tyx"


def test_frame_folder_size_mismatch(tmp_path, make):
    folder = tmp_path / "bad"
    folder.mkdir()
    make.png(folder / "0.png", np.zeros((4, 4), np.uint8))
    make.png(folder / "1.png", np.zeros((4, 5), np.uint8))
    with pytest.raises(ReadError, match=r"1.png: frame shape \(4, 5\) differs"):
        read_image(folder)


def test_mask_frame_folder_as_labels(tmp_path, make):
    folder = tmp_path / "masks"
    folder.mkdir()
    for i in range(2):
        m = np.zeros((4, 5), np.uint8)
        m[i, :] = 255
        make.png(folder / f"m{i}.png", m)
    labels, geometry, _ = read_labels(folder)
    assert labels.shape == (2, 4, 5) and labels.max() == 1 and geometry.ndim == 3


def test_grey_rule():
    f = np.full((1, 2, 2, 3), 100, np.uint8)
    f[..., 1] += 3
    assert to_grey_if_equal(f).shape == (1, 2, 2)
    f[..., 1] += 1
    assert to_grey_if_equal(f).shape == (1, 2, 2, 3)


@pytest.mark.parametrize("ext", [".mp4", ".avi"])
def test_cut_tail_detected_from_container(tmp_path, make, ext):
    path = make.video(tmp_path / f"tail{ext}", make.blocks(4))
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(ReadError, match="truncated"):
        read_image(path)
