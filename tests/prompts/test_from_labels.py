import numpy as np
import pytest

from napari_segeval._errors import InvalidLabelsError
from napari_segeval.prompts.from_labels import box_from_labels, boxes_from_labels, key_index


def _labels():
    lab = np.zeros((20, 16, 16), np.uint8)
    lab[4:13, 3:9, 5:12] = 1  # z-extent 4..12 -> middle 8
    lab[8, 2:10, 4:13] = 1  # the middle slice is larger
    lab[10:15, 12:15, 1:4] = 2
    return lab


def test_volume_key_is_middle_of_extent_and_box_from_that_slice():
    b = box_from_labels(_labels(), 1)
    assert b.index == 8 and b.label == 1
    assert (b.y0, b.x0, b.y1, b.x1) == (2, 4, 10, 13)


def test_video_key_is_first_frame():
    b = box_from_labels(_labels(), 2, mode="video")
    assert b.index == 10
    assert (b.y0, b.x0, b.y1, b.x1) == (12, 1, 15, 4)


def test_split_structure_uses_nearest_present_slice():
    m = np.zeros((11, 4, 4), bool)
    m[0:2, 1, 1] = True
    m[9:11, 2, 2] = True
    assert key_index(m) in (1, 9)


def test_jitter_reproducible_with_seed():
    a = boxes_from_labels(_labels(), jitter=2, seed=3)
    b = boxes_from_labels(_labels(), jitter=2, seed=3)
    assert a == b and [x.label for x in a] == [1, 2]
    tight = boxes_from_labels(_labels())
    assert any(
        x != y
        for s in range(10)
        for x, y in zip(boxes_from_labels(_labels(), jitter=2, seed=s), tight)
    )


def test_absent_structure_is_a_clear_error():
    with pytest.raises(InvalidLabelsError, match="structure 7"):
        box_from_labels(_labels(), 7)
