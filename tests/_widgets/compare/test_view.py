"""Compare mode, the disagreement layer and the outline option."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._widgets.colours import REFERENCE_CONTOUR
from napari_segeval._widgets.overlays.arrays import CHANGED, GAINED, LOST, disagreement


# -- disagreement numerics ------------------------------------------------------------------
def test_disagreement_values_on_a_constructed_pair():
    clean = np.zeros((4, 6, 6), np.uint8)
    clean[1:3, 1:4, 1:4] = 1
    clean[2, 5, 5] = 2
    attacked = np.zeros_like(clean)
    attacked[1:3, 2:5, 1:4] = 1  # shifted one row: loses row 1, gains row 4
    attacked[2, 5, 5] = 1  # structure 2 turned into 1
    out = disagreement(clean, attacked)
    assert out.dtype == np.uint8
    assert set(np.unique(out)) == {0, LOST, GAINED, CHANGED}
    assert np.all(out[1:3, 1, 1:4] == LOST) and (out == LOST).sum() == 6
    assert np.all(out[1:3, 4, 1:4] == GAINED) and (out == GAINED).sum() == 6
    assert out[2, 5, 5] == CHANGED and (out == CHANGED).sum() == 1
    # one structure: 2 -> 1 is a gain of structure 1 and a loss of structure 2
    assert disagreement(clean, attacked, label=1)[2, 5, 5] == GAINED
    assert disagreement(clean, attacked, label=2)[2, 5, 5] == LOST
    # agreement everywhere else, and symmetric roles
    swapped = disagreement(attacked, clean)
    assert np.array_equal(swapped == LOST, out == GAINED)


def test_disagreement_region_update_matches_full():
    rng = np.random.default_rng(0)
    clean = rng.integers(0, 3, (6, 5, 5)).astype(np.uint8)
    attacked = rng.integers(0, 3, (6, 5, 5)).astype(np.uint8)
    out = disagreement(clean, attacked)
    attacked[2:4] = 0
    disagreement(clean, attacked, region=slice(2, 4), out=out)
    assert np.array_equal(out, disagreement(clean, attacked))


def test_disagreement_bad_input():
    with pytest.raises(ValueError, match="differ"):
        disagreement(np.zeros((2, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="region needs out"):
        disagreement(np.zeros((2, 2)), np.zeros((2, 2)), region=slice(0, 1))


# -- viewer -------------------------------------------------------------------------------
@pytest.fixture
def pair_case(small_case):
    """The small case with a clean prediction, an attacked image and an attacked prediction."""
    viewer, state, prediction = small_case
    attacked = np.array(prediction.data)
    attacked[3:9, 10:14, 8:20] = 0  # lost under attack
    attacked[0, 0:4, 0:4] = 1  # gained
    image = state.image
    viewer.add_image(
        np.asarray(image.data) + 5, name="ct attacked (fgsm)", scale=image.scale, visible=False
    )
    att = viewer.add_labels(attacked, name="ct attacked prediction", scale=(2.0, 1.0, 1.0))
    state.set_prediction("clean", prediction)
    state.set_prediction("attacked", att)
    return viewer, state, prediction, att


def _bar(viewer, state):
    from napari_segeval._widgets.compare.view import CompareBar

    return CompareBar(viewer, state)


def test_disagreement_layer_follows_paint(pair_case, qtbot):
    viewer, state, clean, att = pair_case
    bar = _bar(viewer, state)
    qtbot.addWidget(bar)
    bar.disagreement.setChecked(True)
    layer = bar.overlay.layer
    assert layer in viewer.layers
    assert np.array_equal(layer.data, disagreement(clean.data, att.data))
    assert (layer.data == LOST).sum() == 6 * 4 * 12 and (layer.data == GAINED).sum() == 16
    att.data_setitem((np.array([0]), np.array([0]), np.array([0])), 0)  # undo one gained voxel
    qtbot.waitUntil(lambda: layer.data[0, 0, 0] == 0)
    assert (layer.data == GAINED).sum() == 15
    assert np.array_equal(layer.data, disagreement(clean.data, att.data))
    bar.disagreement.setChecked(False)
    assert layer not in viewer.layers
    bar.close()


def test_disagreement_without_pair_unticks(small_case, qtbot):
    viewer, state, prediction = small_case
    state.set_prediction("clean", prediction)
    bar = _bar(viewer, state)
    qtbot.addWidget(bar)
    bar.disagreement.setChecked(True)
    assert not bar.disagreement.isChecked() and bar.overlay.layer is None
    bar.close()


def test_outline_option_sets_contour(pair_case, qtbot):
    viewer, state, clean, att = pair_case
    bar = _bar(viewer, state)
    qtbot.addWidget(bar)
    bar.outlines.setChecked(True)
    assert clean.contour > 0 and att.contour > 0
    assert state.reference.contour == REFERENCE_CONTOUR  # outlined already, as always
    new = viewer.add_labels(np.array(att.data), name="other attacked")
    state.set_prediction("attacked", new)  # a new prediction is outlined too
    assert new.contour > 0
    bar.outlines.setChecked(False)
    assert clean.contour == 0 and new.contour == 0
    bar.close()


@pytest.mark.slow
def test_compare_three_linked_views(pair_case, qtbot):
    viewer, state, clean, att = pair_case
    bar = _bar(viewer, state)
    qtbot.addWidget(bar)
    bar.compare.setChecked(True)
    view = bar.view
    assert view is not None and list(view.models) == ["reference", "clean", "attacked"]
    names = {k: [ly.name for ly in m.layers] for k, m in view.models.items()}
    assert names == {
        "reference": ["ct", "ct reference"],
        "clean": ["ct", "prediction"],
        "attacked": ["ct attacked (fgsm)", "ct attacked prediction"],
    }
    # the hidden attacked image shows in its view; data arrays are shared
    assert view.models["attacked"].layers[0].visible
    assert view.models["clean"].layers[1].data is clean.data
    # each view draws its layer in the colour language: the reference an outline
    mirrored_ref = view.models["reference"].layers[1]
    assert mirrored_ref.contour == REFERENCE_CONTOUR and view.models["clean"].layers[1].contour == 0
    assert mirrored_ref.colormap.color_dict == state.reference.colormap.color_dict
    models = list(view.models.values())

    # slice: main -> views
    viewer.dims.set_point(0, 10.0)
    assert all(m.dims.point[0] == pytest.approx(10.0) for m in models)
    # slice: a view -> main and the other views
    models[2].dims.set_point(0, 4.0)
    assert viewer.dims.point[0] == pytest.approx(4.0)
    assert models[0].dims.point[0] == pytest.approx(4.0)
    # zoom and pan: main -> views, and a view -> main
    viewer.camera.zoom = 3.5
    assert all(m.camera.zoom == pytest.approx(3.5) for m in models)
    models[1].camera.zoom = 1.25
    models[1].camera.center = (0.0, 7.0, 9.0)
    assert viewer.camera.zoom == pytest.approx(1.25)
    assert tuple(viewer.camera.center)[-2:] == pytest.approx((7.0, 9.0))
    assert tuple(models[2].camera.center)[-2:] == pytest.approx((7.0, 9.0))
    # cursor
    models[0].cursor.position = (4.0, 11.0, 12.0)
    assert tuple(viewer.cursor.position) == pytest.approx((4.0, 11.0, 12.0))
    assert tuple(models[2].cursor.position) == pytest.approx((4.0, 11.0, 12.0))
    # layers follow the main ones
    clean.opacity = 0.3
    assert view.models["clean"].layers[1].opacity == pytest.approx(0.3)
    clean.visible = False
    assert not view.models["clean"].layers[1].visible
    bar.outlines.setChecked(True)
    assert view.models["attacked"].layers[1].contour > 0
    new = np.zeros_like(att.data)
    att.data = new
    assert view.models["attacked"].layers[1].data is new
    # closing tears everything down
    bar.compare.setChecked(False)
    assert bar.view is None and view.closed and view.connections == 0
    assert not view.models and not view.qt_viewers
    viewer.dims.set_point(0, 8.0)  # no error once unlinked
    bar.close()


@pytest.mark.slow
def test_compare_shows_the_attacked_image_the_state_names(pair_case, qtbot):
    viewer, state, _clean, _att = pair_case
    named = viewer.layers["ct attacked (fgsm)"]
    image = state.image
    # the image an attack made, named like no other; then a look-alike opened later
    made = viewer.add_image(
        np.asarray(image.data) - 5, name="adversarial input", scale=image.scale, visible=False
    )
    state.set_attacked_image(made)
    viewer.add_image(np.asarray(image.data) + 9, name="old perturbed (pgd)", scale=image.scale)
    bar = _bar(viewer, state)
    qtbot.addWidget(bar)
    bar.compare.setChecked(True)
    assert bar.view.models["attacked"].layers[0].data is made.data
    viewer.layers.remove(made)  # gone from the viewer: back to the names
    assert bar.view.models["attacked"].layers[0].name in ("old perturbed (pgd)", named.name)
    bar.compare.setChecked(False)
    bar.close()


@pytest.mark.slow
def test_compare_rebuilds_when_the_case_changes(pair_case, qtbot):
    viewer, state, _clean, att = pair_case
    bar = _bar(viewer, state)
    qtbot.addWidget(bar)
    view = bar.set_compare(True)
    viewer.layers.remove(att)  # the picker would clear the state; the view drops it at once
    assert [ly.name for ly in view.models["attacked"].layers] == ["ct attacked (fgsm)"]
    state.set_prediction("attacked", None)
    assert "none yet" in view.titles["attacked"].text()
    bar.close()
    assert view.closed


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(20, 24), (5, 20, 24, 3)])
def test_compare_2d_and_rgb_video(make_napari_viewer, qtbot, shape):
    from napari_segeval._widgets._state import ViewerState

    viewer = make_napari_viewer()
    rgb = len(shape) == 4
    image = viewer.add_image(
        np.zeros(shape, np.uint8),
        name="frames",
        rgb=rgb,
        metadata={"axes": "tyxc" if rgb else "yx"},
    )
    lab = np.zeros(shape[:-1] if rgb else shape, np.uint8)
    lab[..., 2:8, 3:9] = 1
    ref = viewer.add_labels(lab, name="reference", metadata={"structures": {1: "tool"}})
    pred = viewer.add_labels(lab.copy(), name="prediction")
    state = ViewerState()
    state.set_image(image)
    state.set_reference(ref)
    state.set_prediction("clean", pred)
    bar = _bar(viewer, state)
    qtbot.addWidget(bar)
    view = bar.set_compare(True)
    assert all(len(m.layers) == (1 if k == "attacked" else 2) for k, m in view.models.items())
    qtbot.waitUntil(lambda: not view._fit_timer.isActive())  # fitted once laid out
    assert {m.camera.zoom for m in view.models.values()} == {viewer.camera.zoom}
    viewer.camera.zoom = 2.0
    assert view.models["reference"].camera.zoom == pytest.approx(2.0)
    if rgb:
        view.models["clean"].dims.set_point(0, 3.0)
        assert viewer.dims.point[0] == pytest.approx(3.0)
    bar.close()


@pytest.mark.slow
def test_compare_follows_a_case_swap(small_case, qtbot):
    """The results browser swaps cases with ``set_case``; its perturbed image is found."""
    viewer, state, prediction = small_case
    bar = _bar(viewer, state)
    qtbot.addWidget(bar)
    view = bar.set_compare(True)
    assert [ly.name for ly in view.models["attacked"].layers] == ["ct"]  # no attack yet
    image = viewer.add_image(np.zeros((12, 32, 32), np.float32), name="case_1 image")
    perturbed = viewer.add_image(
        np.ones((12, 32, 32), np.float32), visible=False, name="case_1 perturbed (fgsm eps=0.5)"
    )
    viewer.add_image(np.ones((12, 32, 32), np.float32), name="case_1 perturbation (fgsm)")
    ref = viewer.add_labels(
        np.array(state.reference.data),
        name="case_1 reference",
        metadata={"structures": {1: "liver"}},
    )
    att = viewer.add_labels(np.array(prediction.data), name="case_1 fgsm")
    state.set_case(image, ref, {"clean": prediction, "attacked": att})
    names = {k: [ly.name for ly in m.layers] for k, m in view.models.items()}
    assert names["reference"] == ["case_1 image", "case_1 reference"]
    assert names["attacked"] == [perturbed.name, "case_1 fgsm"]
    bar.close()


@pytest.mark.slow
def test_demo_ends_in_compare_mode(make_napari_viewer, qtbot):
    from napari_segeval._widgets.demo import DemoRun

    viewer = make_napari_viewer()
    demo = DemoRun(viewer, backend="threshold", device="cpu", attack="fgsm", eps=0.1, compare=True)
    demo.start()
    qtbot.waitUntil(lambda: demo.settled, timeout=120000)
    assert demo.error is None
    display = demo.widget.display
    view = display.view
    assert view is not None and display.overlay.shown
    assert [ly.name for ly in view.models["attacked"].layers] == [
        "ct attacked (fgsm)",
        "ct attacked prediction",
    ]
    view.fit()
    zooms = {m.camera.zoom for m in view.models.values()} | {viewer.camera.zoom}
    assert len(zooms) == 1
    display.close()
    assert display.view is None


def test_cli_demo_has_a_compare_flag():
    import argparse

    from napari_segeval.cli import _demo

    parser = argparse.ArgumentParser()
    _demo.add_parser(parser.add_subparsers())
    assert parser.parse_args(["demo", "--compare"]).compare
    assert not parser.parse_args(["demo"]).compare
