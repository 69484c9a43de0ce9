import json
import sys
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from napari_segeval._layer_data import looks_like_labels
from napari_segeval._reader import napari_get_reader, read_layers


def _nifti(path, data, zooms=(0.8, 0.6, 3.0), origin=(0.0, 0.0, 0.0)):
    affine = np.diag([*zooms, 1.0])
    affine[:3, 3] = origin
    nib.save(nib.Nifti1Image(data, affine), str(path))
    return str(path)


def test_get_reader_none_for_unhandled_and_never_raises(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    assert napari_get_reader(str(tmp_path / "notes.txt")) is None
    assert napari_get_reader(str(tmp_path / "missing.nii.gz")) is None
    assert napari_get_reader(str(tmp_path)) is None  # empty folder
    assert napari_get_reader(None) is None
    assert napari_get_reader([str(tmp_path / "notes.txt")]) is None


def test_image_layer_scale_translate_metadata(tmp_path):
    path = _nifti(tmp_path / "ct.nii.gz", np.full((4, 5, 6), -1000, np.int16), origin=(-5, -6, 7))
    reader = napari_get_reader(path)
    assert reader is not None
    [(data, kwargs, kind)] = reader(path)
    assert kind == "image" and data.shape == (6, 5, 4)
    assert kwargs["scale"] == pytest.approx((3.0, 0.6, 0.8))
    # RAS diag affine -> LPS direction diag(-1, -1, 1): not identity, so no translate
    assert kwargs["translate"] == (0.0, 0.0, 0.0)
    meta = kwargs["metadata"]
    assert meta["modality"] == "CT" and meta["axes"] == "zyx" and meta["source"] == path
    assert set(meta["geometry"]) == {"spacing", "origin", "direction"}


def test_translate_with_identity_direction(tmp_path):
    from napari_segeval.io import Geometry, write_image

    g = Geometry((2.0, 1.0, 0.5), (10.0, 20.0, 30.0), np.eye(3).ravel())
    path = str(write_image(tmp_path / "v.mha", np.zeros((2, 3, 4), np.float32), g))
    [(_, kwargs, _)] = read_layers(path)
    assert kwargs["translate"] == (30.0, 20.0, 10.0) and kwargs["scale"] == (2.0, 1.0, 0.5)


def test_labels_layer_with_structures(tmp_path):
    task = tmp_path / "Task09_Spleen"
    (task / "labelsTr").mkdir(parents=True)
    (task / "dataset.json").write_text(json.dumps({"labels": {"0": "background", "1": "spleen"}}))
    seg = np.zeros((4, 5, 6), np.uint8)
    seg[1:3, 1:3, 1:3] = 1
    path = _nifti(task / "labelsTr" / "spleen_1.nii.gz", seg)
    [(data, kwargs, kind)] = read_layers(path)
    assert kind == "labels" and data.dtype == np.uint8 and data.sum() == 8
    assert kwargs["metadata"]["structures"] == {1: "spleen"}
    assert kwargs["features"] == {"index": [0, 1], "name": ["background", "spleen"]}


def test_float_seg_named_file_opens_as_image(tmp_path):
    path = _nifti(tmp_path / "seg_prob.nii", np.full((2, 2, 2), 0.5, np.float32))
    assert read_layers(path)[0][2] == "image"


def test_rgb_png(tmp_path):
    from PIL import Image

    Image.fromarray(np.zeros((4, 5, 3), np.uint8)).save(tmp_path / "polyp.png")
    [(_, kwargs, kind)] = read_layers(str(tmp_path / "polyp.png"))
    assert kind == "image" and kwargs["rgb"] is True and kwargs["scale"] == (1.0, 1.0)


@pytest.fixture
def notes(monkeypatch):
    """Notifications the reader shows, as (level, message) pairs."""
    from napari_segeval import _reader

    shown = []
    monkeypatch.setattr(_reader, "_notify", lambda level, msg: shown.append((level, msg)))
    return shown


def test_corrupt_handled_file_is_a_notification_not_an_exception(tmp_path, notes):
    (tmp_path / "bad.nii.gz").write_bytes(b"garbage")
    good = _nifti(tmp_path / "ct.nii.gz", np.zeros((2, 3, 4), np.int16))
    reader = napari_get_reader(str(tmp_path / "bad.nii.gz"))
    assert reader(str(tmp_path / "bad.nii.gz")) == [(None,)]
    [(level, msg)] = notes
    assert level == "error" and "bad.nii.gz: cannot read NIfTI" in msg and "\n" not in msg
    layers = reader([str(tmp_path / "bad.nii.gz"), good])
    assert len(layers) == 1 and layers[0][2] == "image"


@pytest.mark.parametrize(
    "name, data",
    [
        ("a.dcm", b"\0" * 128 + b"DICM" + b"\xff" * 50),
        ("b.mnc", b"junk"),
        ("c.hdr", b"\0" * 348),
        ("d.dcm.gz", b"\x1f\x8b junk"),
    ],
)
def test_reader_never_raises(tmp_path, notes, name, data):
    (tmp_path / name).write_bytes(data)
    reader = napari_get_reader(str(tmp_path / name))
    assert reader is not None and reader(str(tmp_path / name)) == [(None,)]
    assert notes[0][0] == "error" and name in notes[0][1]


def test_cifti_notification(tmp_path, notes):
    img = nib.Nifti2Image(np.zeros((1, 1, 1, 1, 3, 7), np.float32), np.eye(4))
    img.header.set_intent(3002)
    nib.save(img, tmp_path / "sub.dtseries.nii")
    assert read_layers(str(tmp_path / "sub.dtseries.nii")) == [(None,)]
    expected = (
        f"{tmp_path / 'sub.dtseries.nii'}: CIFTI is not supported "
        "(surface/grayordinate data, not an image on a grid)"
    )
    assert notes == [("error", expected)]


def test_nan_image_gets_mask_layer_and_limits(tmp_path, notes):
    data = np.full((4, 5, 3), 50.0, np.float32)
    data[0] = np.nan
    data[1, 1, 1] = 10.0
    [(image, kwargs, kind), (mask, mkw, mkind)] = read_layers(_nifti(tmp_path / "pet.nii", data))
    assert kind == "image" and mkind == "labels" and kwargs["contrast_limits"] == (10.0, 50.0)
    assert mask.sum() == 15 and mask.shape == image.shape and mkw["scale"] == kwargs["scale"]
    assert mkw["name"] == "pet.nii NaN"
    assert notes and notes[0][0] == "warning" and "15 of 60 voxels are NaN" in notes[0][1]


def test_4d_nifti_time_series_layer(tmp_path, notes):
    path = _nifti(tmp_path / "dwi.nii.gz", np.zeros((4, 5, 3, 7), np.int16))
    [(data, kwargs, _)] = read_layers(path)
    assert data.shape == (7, 3, 5, 4) and kwargs["metadata"]["axes"] == "tzyx"
    assert kwargs["scale"] == pytest.approx((1.0, 3.0, 0.6, 0.8))


def test_dicom_folder_says_which_series(tmp_path, notes):
    sys.path.insert(0, str(Path(__file__).resolve().parent / "io"))
    from dicom_factory import pydicom_file

    folder = tmp_path / "scouts"
    folder.mkdir()
    pydicom_file(folder / "a.dcm", np.zeros((4, 5), np.int16), instance=1)
    pydicom_file(folder / "b.dcm", np.zeros((4, 5), np.int16), instance=2, iop=(0, 1, 0, 0, 0, -1))
    pydicom_file(
        folder / "c.dcm",
        np.zeros((4, 5), np.int16),
        instance=3,
        iop=(0, 1, 0, 0, 0, -1),
        ipp=(3.0, 0, 0),
    )
    [(data, _, _)] = read_layers(str(folder))
    assert data.shape == (2, 4, 5)  # the two sagittal slices, not all three
    assert notes[0][0] == "info" and "largest of 2" in notes[0][1]


def test_label_map_by_content_is_said_once(tmp_path, notes):
    seg = np.zeros((6, 7, 8), np.int16)
    seg[1:5, 1:6, 1:4], seg[1:5, 1:6, 4:7] = 1, 3
    [(data, kwargs, kind)] = read_layers(_nifti(tmp_path / "brain.nii.gz", seg))
    assert kind == "labels" and data.dtype == np.uint8 and kwargs["metadata"]["labels_reason"]
    said = (
        "brain.nii.gz: opened as labels (integer voxels with 3 values (0 the most common) "
        "that agree between neighbours)"
    )
    assert notes == [("info", said)]


def test_colour_dicom_loop_is_an_rgb_layer(tmp_path, notes):
    sys.path.insert(0, str(Path(__file__).resolve().parent / "io"))
    from dicom_factory import palette_tags, pydicom_file

    i = np.arange(256)
    idx = np.random.default_rng(0).integers(0, 256, (3, 4, 5)).astype(np.uint8)
    path = pydicom_file(
        tmp_path / "us.dcm",
        idx,
        modality="US",
        iop=None,
        ipp=None,
        spacing=(0.3, 0.2),
        **palette_tags(i, 255 - i, i // 2, bits=8),
    )
    [(data, kwargs, kind)] = read_layers(str(path))
    assert kind == "image" and kwargs["rgb"] is True and data.shape == (3, 4, 5, 3)
    assert kwargs["scale"] == (1.0, 0.3, 0.2) and kwargs["metadata"]["axes"] == "tyxc"
    np.testing.assert_array_equal(data[..., 1], 255 - idx)


def test_label_name_rule():
    assert looks_like_labels("case_001_seg.nii.gz") and looks_like_labels("ISIC_1_mask.png")
    assert looks_like_labels("p_gt.mhd") and not looks_like_labels("image_001.nii.gz")


def test_viewer_opens_anisotropic_nifti(make_napari_viewer, tmp_path):
    viewer = make_napari_viewer()
    image = _nifti(tmp_path / "ct.nii.gz", np.zeros((8, 9, 10), np.int16), zooms=(0.5, 0.7, 2.5))
    seg = np.zeros((8, 9, 10), np.uint8)
    seg[2:5, 2:5, 2:5] = 1
    labels = _nifti(tmp_path / "ct_seg.nii.gz", seg, zooms=(0.5, 0.7, 2.5))
    layers = viewer.open(image, plugin="napari-segeval") + viewer.open(
        labels, plugin="napari-segeval"
    )
    img_layer, lab_layer = layers
    np.testing.assert_allclose(img_layer.scale, (2.5, 0.7, 0.5))
    np.testing.assert_allclose(lab_layer.scale, (2.5, 0.7, 0.5))
    assert img_layer.data.shape == (10, 9, 8)
    assert type(lab_layer).__name__ == "Labels"
    assert list(lab_layer.features["name"]) == ["background", "label 1"]
    assert lab_layer.metadata["geometry"]["spacing"] == pytest.approx([2.5, 0.7, 0.5])


def test_label_video_axes(tmp_path):
    from PIL import Image

    for name, expected in (("clip", "image"), ("clip_masks", "labels")):
        folder = tmp_path / name
        folder.mkdir()
        for i in range(3):
            Image.fromarray(np.zeros((4, 5), np.uint8)).save(folder / f"{i}.png")
        [(_, kwargs, kind)] = read_layers(str(folder))
        assert kind == expected and kwargs["metadata"]["axes"] == "tyx"
    seq = tmp_path / "p_sequence_gt.mhd"
    import SimpleITK as sitk

    sitk.WriteImage(sitk.GetImageFromArray(np.zeros((3, 4, 5), np.uint8)), str(seq))
    [(_, kwargs, kind)] = read_layers(str(seq))
    assert kind == "labels" and kwargs["metadata"]["axes"] == "tyx"


def test_sagittal_slice_layer_saved_on_its_plane(tmp_path, notes):
    sys.path.insert(0, str(Path(__file__).resolve().parent / "io"))
    from dicom_factory import pydicom_file

    from napari_segeval._writer import write_labels_layer
    from napari_segeval.io import read_labels

    src = pydicom_file(
        tmp_path / "sag.dcm",
        np.zeros((4, 5), np.int16),
        iop=(0, 1, 0, 0, 0, -1),
        ipp=(12.0, -3.0, 40.0),
        modality="MR",
    )
    [(data, kwargs, _)] = read_layers(str(src))
    assert kwargs["translate"] == (0.0, 0.0) and kwargs["scale"] == (0.7, 0.6)
    seg = np.zeros(data.shape, np.uint8)
    seg[1, 2] = 1
    [out] = write_labels_layer(str(tmp_path / "seg.nii.gz"), seg, kwargs)
    affine = nib.load(out).affine  # voxel (i=2, j=1) lies on the sagittal plane x = 12 (LPS)
    np.testing.assert_allclose(
        affine @ [2, 1, 0, 1], [-12.0, 3.0 - 2 * 0.6, 40.0 - 0.7, 1], atol=1e-4
    )
    labels, geometry, _ = read_labels(out)
    assert labels.shape == (4, 5) and geometry.plane.origin == pytest.approx((12.0, -3.0, 40.0))


def test_viewer_opens_dicom_folder_and_broken_file(make_napari_viewer, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent / "io"))
    from dicom_factory import pydicom_series

    viewer = make_napari_viewer()
    folder = pydicom_series(tmp_path / "ct", np.zeros((3, 4, 5), np.int16))
    [layer] = viewer.open(str(folder), plugin="napari-segeval")
    np.testing.assert_allclose(layer.scale, (2.5, 0.7, 0.6))
    (tmp_path / "broken.dcm").write_bytes(b"\0" * 128 + b"DICM" + b"\xff" * 40)
    assert viewer.open(str(tmp_path / "broken.dcm"), plugin="napari-segeval") == []
