"""A time series of volumes (4D NIfTI) in the viewer: refused as a video, one volume taken."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._reader import napari_get_reader
from napari_segeval._widgets._state import SERIES_HINT, ViewerState, go_to_index
from napari_segeval._widgets.evaluate.segment import SegmentPanel
from napari_segeval._widgets.prompt.panel import PromptPanel
from napari_segeval.io import Geometry, read_case, write_image, write_labels


@pytest.fixture
def series(tmp_path):
    """A (t=3, z=6, y=10, x=12) image whose volumes differ, with a 4D reference."""
    rng = np.random.default_rng(0)
    image = rng.normal(0, 10, (3, 6, 10, 12)).astype(np.float32)
    labels = np.zeros(image.shape, np.uint8)
    for t in range(3):
        labels[t, 1:5, 2 + t : 6 + t, 3:8] = 1  # the structure moves with time
        image[t] += 100 * labels[t]
    g = Geometry((2.0, 0.8, 0.7), (1.0, 2.0, 3.0), (1, 0, 0, 0, 1, 0, 0, 0, 1)).stacked()
    img = write_image(tmp_path / "cine.nii.gz", image, g)
    lab = write_labels(tmp_path / "cine_seg.nii.gz", labels, g)
    return img, lab


def _open(viewer, img, lab):
    for path in (img, lab):
        for data, kwargs, kind in napari_get_reader(str(path))(str(path)):
            if kind == "labels" or path == lab:
                viewer.add_labels(data, **kwargs)
            else:
                viewer.add_image(data, **kwargs)
    state = ViewerState()
    state.set_image(viewer.layers[0])
    state.set_reference(viewer.layers[-1])
    return state


def test_series_is_not_a_video_and_one_volume_is_taken(make_napari_viewer, series):
    img, lab = series
    viewer = make_napari_viewer()
    state = _open(viewer, img, lab)
    assert state.axes() == "tzyx" and state.kind() == "series"
    panel = PromptPanel(viewer, state)
    assert not panel.volume_button.isHidden()
    state.set_current(1)
    for action in (panel.tools.go_to_middle, panel.tools.box_from_reference, panel.run):
        with pytest.raises(ValueError, match="time series of volumes"):
            action()
    with pytest.raises(ValueError, match="time series of volumes"):
        SegmentPanel(viewer, state).run()
    go_to_index(viewer, state.image, 2)
    new_image, new_ref = panel.take_volume()
    want = read_case(img, lab, volume=2)
    np.testing.assert_array_equal(new_image.data, want.image)
    np.testing.assert_array_equal(new_ref.data, want.labels)
    assert new_image.name.endswith("t=2") and new_image.metadata["axes"] == "zyx"
    assert Geometry.from_dict(new_image.metadata["geometry"]).matches(want.geometry)
    assert state.image is new_image and state.reference is new_ref
    assert state.kind() == "volume" and panel.volume_button.isHidden()
    assert not viewer.layers[0].visible  # the series is hidden, its volume shown
    box = panel.tools.box_from_reference()  # prompting works on the volume
    assert box.label == 1 and 1 <= box.index <= 4


def test_series_hint_names_the_way_out():
    assert "Take the volume shown" in SERIES_HINT
