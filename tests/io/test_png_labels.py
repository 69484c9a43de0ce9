"""2D label maps written as PNG: exact round trip, refused where PNG would lose something."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from napari_segeval._errors import WriteError
from napari_segeval.io import Geometry, read_labels, write_labels


@pytest.mark.parametrize("top, dtype", [(7, np.uint8), (300, np.uint16)])
def test_round_trip(tmp_path, top, dtype):
    lab = np.zeros((9, 11), np.int64)
    lab[2:5, 3:8] = 1
    lab[6:8, 1:4] = top
    path = write_labels(tmp_path / "pred.png", lab, Geometry.identity(2))
    px = np.asarray(Image.open(path))
    assert px.dtype == dtype and px.shape == lab.shape
    np.testing.assert_array_equal(px, lab)
    back, geometry, _ = read_labels(path)
    np.testing.assert_array_equal(back, lab)
    assert geometry.matches(Geometry.identity(2))
    assert [p.name for p in tmp_path.iterdir()] == ["pred.png"]  # no temporary left


def test_refusals_name_the_file_and_write_nothing(tmp_path):
    lab = np.ones((4, 5), np.uint8)
    for args, message in (
        ((lab[None], Geometry.identity(3)), "2D label maps only"),
        ((lab, Geometry.identity(2, (0.5, 0.5))), "cannot store this geometry"),
        ((np.full((4, 5), 70000), Geometry.identity(2)), "up to 65535"),
    ):
        with pytest.raises(WriteError, match=message) as err:
            write_labels(tmp_path / "x.png", *args)
        assert str(err.value).startswith(f"{tmp_path / 'x.png'}: ")
    assert not any(tmp_path.iterdir())
    write_labels(tmp_path / "x.png", lab, Geometry.identity(2))
    with pytest.raises(WriteError, match="exists"):
        write_labels(tmp_path / "x.png", lab, Geometry.identity(2))
    write_labels(tmp_path / "x.png", lab * 2, Geometry.identity(2), overwrite=True)
    assert np.asarray(Image.open(tmp_path / "x.png")).max() == 2
