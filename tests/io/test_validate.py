import numpy as np
import pytest

from napari_segeval._errors import GeometryMismatchError, InvalidImageError, InvalidLabelsError
from napari_segeval.io import Geometry
from napari_segeval.io._validate import as_labels, check_image, check_same_grid, label_dtype


def test_check_image():
    with pytest.raises(InvalidImageError, match="expected 3 dimensions|3 for axes"):
        check_image(np.zeros((2, 2)), "zyx", "v.nii")
    with pytest.raises(InvalidImageError, match="empty"):
        check_image(np.zeros((0, 2)), "yx", "v.nii")
    with pytest.raises(InvalidImageError, match="unsupported pixel type"):
        check_image(np.zeros((2, 2), complex), "yx", "v.nii")


def test_as_labels_rules():
    assert as_labels(np.array([True, False]), "s").dtype == np.uint8
    assert as_labels(np.array([0, 300], np.int64), "s").dtype == np.uint16
    with pytest.raises(
        InvalidLabelsError, match=r"s.nii: label map has negative ids \(minimum -1\)"
    ):
        as_labels(np.array([0, -1]), "s.nii")
    with pytest.raises(InvalidLabelsError, match="NaN or infinite"):
        as_labels(np.array([0.0, np.nan]), "s.nii")
    with pytest.raises(InvalidLabelsError, match="too large"):
        label_dtype(2**40)


def test_mismatch_messages_state_both_sides():
    a = Geometry((2.0, 1.0, 1.0), (0, 0, 0), np.eye(3).ravel())
    b = Geometry((2.5, 1.0, 1.0), (0, 0, 5), np.eye(3).ravel())
    with pytest.raises(GeometryMismatchError) as err:
        check_same_grid((2, 3, 4), a, (2, 3, 4), b, "ct.nii.gz", "seg.nii.gz")
    msg = str(err.value)
    assert "seg.nii.gz" in msg and "ct.nii.gz" in msg
    assert (
        "spacing (2.5, 1, 1) origin (0, 0, 5)" in msg
        and "spacing (2, 1, 1) origin (0, 0, 0)" in msg
    )
    c = Geometry((2.0, 1.0, 1.0), (0, 0, 0), (0, 1, 0, 1, 0, 0, 0, 0, 1))
    with pytest.raises(GeometryMismatchError, match="direction"):
        check_same_grid((2, 3, 4), a, (2, 3, 4), c, "ct", "seg")
