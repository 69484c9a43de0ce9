from __future__ import annotations

import numpy as np

from napari_segeval.phantoms import ECHO_STRUCTURES, make_echo_clip


def test_determinism_and_seed_variation():
    a, b = make_echo_clip(3, n_frames=4), make_echo_clip(3, n_frames=4)
    c = make_echo_clip(4, n_frames=4)
    assert np.array_equal(a.image, b.image) and np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.image, c.image)


def test_types_geometry_and_names(echo_clip):
    assert echo_clip.image.shape == echo_clip.labels.shape == (24, 112, 112)
    assert echo_clip.image.dtype == np.uint8 and echo_clip.labels.dtype == np.uint8
    assert echo_clip.axes == "tyx" and echo_clip.modality == "US"
    assert echo_clip.spacing[0] == 1.0 and echo_clip.spacing[1] == echo_clip.spacing[2] > 0.1
    assert ECHO_STRUCTURES == {1: "lv_cavity", 2: "myocardium", 3: "left_atrium"}
    assert echo_clip.structures == ECHO_STRUCTURES


def test_every_structure_in_every_frame(echo_clip):
    for t in range(echo_clip.labels.shape[0]):
        assert set(np.unique(echo_clip.labels[t]).tolist()) == {0, 1, 2, 3}


def test_sector_field_of_view(echo_clip):
    img = echo_clip.image
    assert (img[:, 0, :5] == 0).all() and (img[:, 0, -5:] == 0).all()  # outside the fan
    assert img[:, 50, 56].mean() > 0


def test_dark_blood_bright_myocardium(echo_clip):
    img, lab = echo_clip.image, echo_clip.labels
    lv, myo, la = img[lab == 1].mean(), img[lab == 2].mean(), img[lab == 3].mean()
    assert myo > 2 * lv and myo > 2 * la


def test_heart_beats(echo_clip):
    area = (echo_clip.labels == 1).sum(axis=(1, 2))
    assert area.max() > 1.25 * area.min()
    ed, es = echo_clip.meta["ed_frame"], echo_clip.meta["es_frame"]
    assert area[ed] == area.max() and area[es] == area.min()


def test_phase_varies_with_seed():
    eds = {make_echo_clip(s, n_frames=24, shape=(48, 48)).meta["ed_frame"] for s in range(6)}
    assert len(eds) > 1
