"""The Case panel: the package's one layer picker, the viewer's shared state."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from napari_segeval._widgets._layers import NONE
from napari_segeval._widgets.case import CaseWidget
from napari_segeval._widgets.main import SegEvalWidget


def _two_images(viewer):
    first = viewer.add_image(np.zeros((4, 8, 8), np.float32), name="first", scale=(2, 1, 1))
    second = viewer.add_image(np.ones((4, 8, 8), np.float32), name="second", scale=(2, 1, 1))
    ref = np.zeros((4, 8, 8), np.uint8)
    ref[1:3, 2:5, 2:5] = 1
    reference = viewer.add_labels(
        ref, name="reference", scale=(2, 1, 1), metadata={"structures": {1: "liver"}}
    )
    return first, second, reference


def test_docked_case_and_evaluate_panels_share_the_layers(make_napari_viewer):
    viewer = make_napari_viewer()
    first, second, reference = _two_images(viewer)
    # the way napari opens them: from the manifest, given only the viewer
    _, case = viewer.window.add_plugin_dock_widget("napari-segeval", "Case")
    _, evaluate = viewer.window.add_plugin_dock_widget("napari-segeval", "Evaluate")
    assert isinstance(case, CaseWidget) and isinstance(evaluate, SegEvalWidget)
    assert case.state is evaluate.state
    assert case.state.image is first and case.state.reference is reference
    assert list(case.picker.combos) == ["image", "reference"]

    # an image chosen in Case is the image of Evaluate
    case.picker.combos["image"].value = viewer.layers["second"]
    assert evaluate.state.image is second
    assert evaluate.picker.combos["image"].current_choice == "second"
    assert case.fields["spacing"].text() == "2 x 1 x 1 mm"

    # a reference dropped in Evaluate is dropped in Case
    evaluate.picker.combos["reference"].value = NONE
    assert case.picker.combos["reference"].current_choice == NONE
    assert case.state.reference is None
    assert case.fields["structures"].text() == "-"
    assert case.status.text() == ""
    evaluate.picker.combos["reference"].value = viewer.layers["reference"]
    assert case.state.reference is reference
    assert case.fields["structures"].text() == "1: liver"
    assert case.status.text() == "reference lines up with the image"

    # a deleted layer leaves both pickers
    viewer.layers.remove(second)
    assert case.state.image is None
    assert case.picker.combos["image"].current_choice == NONE
    assert evaluate.picker.combos["image"].current_choice == NONE


def test_each_viewer_has_its_own_state(make_napari_viewer):
    one, two = make_napari_viewer(), make_napari_viewer()
    _two_images(one)
    case_one, case_two = CaseWidget(one), CaseWidget(two)
    assert case_one.state is not case_two.state
    assert case_two.state.image is None and case_one.state.image is not None
    assert SegEvalWidget(one).state is case_one.state


def test_closed_case_panel_is_not_kept_by_the_shared_state(make_napari_viewer):
    viewer = make_napari_viewer()
    _two_images(viewer)
    dock, case = viewer.window.add_plugin_dock_widget("napari-segeval", "Case")
    _, evaluate = viewer.window.add_plugin_dock_widget("napari-segeval", "Evaluate")
    gone = weakref.ref(case)
    viewer.window.remove_dock_widget(dock)
    del dock, case
    gc.collect()
    assert gone() is None
    evaluate.picker.combos["image"].value = viewer.layers["second"]  # no listener left dangling
    assert evaluate.state.image is viewer.layers["second"]


def test_grid_status_names_a_mismatch(make_napari_viewer):
    viewer = make_napari_viewer()
    viewer.add_image(np.zeros((4, 8, 8), np.float32), name="ct")
    viewer.add_labels(np.zeros((4, 8, 9), np.uint8), name="ct reference")
    case = CaseWidget(viewer)
    assert case.state.reference is viewer.layers["ct reference"]
    assert "differs from image shape" in case.status.text()


def _opened(viewer, tmp_path, name, data):
    import nibabel as nib

    nib.save(nib.Nifti1Image(data, np.eye(4)), tmp_path / name)
    return viewer.open(str(tmp_path / name), plugin="napari-segeval")[0]


def test_the_one_labels_layer_opened_is_the_reference_without_a_click(make_napari_viewer, tmp_path):
    """A label map whose name says nothing opens as Labels and becomes the reference,
    opened before or after the panel; a prediction or a second label map does not."""
    seg = np.zeros((8, 9, 10), np.uint8)
    seg[2:6, 2:7, 2:8] = 1
    seg[2:6, 7:9, 2:8] = 2
    viewer = make_napari_viewer()
    image = _opened(viewer, tmp_path, "t1.nii.gz", np.full((8, 9, 10), 40.5, np.float32))
    _, case = viewer.window.add_plugin_dock_widget("napari-segeval", "Case")
    assert case.state.image is image and case.state.reference is None
    brain = _opened(viewer, tmp_path, "brain.nii.gz", seg)  # opened after the panel
    assert (
        type(brain).__name__ == "Labels"
        and "agree between neighbours" in brain.metadata["labels_reason"]
    )
    assert case.state.reference is brain and case.state.structures == {1: "label 1", 2: "label 2"}
    # named as the reference it now is, in the layer list and the picker
    assert brain.name == "reference (brain)"
    assert case.picker.combos["reference"].current_choice == "reference (brain)"
    viewer.add_labels(seg, name="prediction", metadata={"structures": {}})
    assert case.state.reference is brain

    other = make_napari_viewer()
    _opened(other, tmp_path, "a.nii.gz", seg)
    _opened(other, tmp_path, "b.nii.gz", seg)
    _, two = other.window.add_plugin_dock_widget("napari-segeval", "Case")
    assert two.state.reference is None  # two candidates: the person chooses
    third = make_napari_viewer()
    one = _opened(third, tmp_path, "brain.nii.gz", seg)  # opened before the panel
    _, panel = third.window.add_plugin_dock_widget("napari-segeval", "Evaluate")
    assert panel.state.reference is one
