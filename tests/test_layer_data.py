"""Layer data: which files open as labels by their content, and why (``labels_reason``)."""

from __future__ import annotations

import nibabel as nib
import numpy as np
import pytest

from napari_segeval._layer_data import (
    MAX_LABEL_VALUES,
    MIN_AGREEMENT,
    file_layers,
    labels_by_content,
)


def _organs(shape=(10, 40, 48), n=4, dtype=np.uint8):
    """A label map of ``n`` box-shaped structures on zero background."""
    seg = np.zeros(shape, dtype)
    for k in range(1, n + 1):
        seg[2:8, 4 + 8 * ((k - 1) % 4) : 10 + 8 * ((k - 1) % 4), 4 : 20 + 2 * k] = k
    return seg


def _nifti(path, data):
    nib.save(nib.Nifti1Image(data, np.diag([0.8, 0.7, 2.5, 1.0])), str(path))
    return path


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.int32, np.int64, bool])
def test_label_maps_of_any_integer_type_are_labels(dtype):
    seg = _organs(n=1 if dtype is bool else 4).astype(dtype)
    n = 2 if dtype is bool else 5
    assert labels_by_content(seg, "zyx") == (
        f"integer voxels with {n} values (0 the most common) that agree between neighbours"
    )


def test_thresholds_are_the_documented_ones():
    many = np.zeros((4, 40, 400), np.uint16)
    for k in range(1, 40):
        many[:, :, 10 * k : 10 * k + 10] = k  # 40 values, every one a flat band
    many[:, 20:] = 0
    assert labels_by_content(many, "zyx") is None and MAX_LABEL_VALUES == 32
    assert labels_by_content(many % MAX_LABEL_VALUES, "zyx") is not None  # 32 values
    assert MIN_AGREEMENT == 0.9


@pytest.mark.parametrize(
    "what",
    [
        "8-bit grey picture",
        "dark 8-bit picture with few levels",
        "CT in integer HU",
        "CT stored unsigned",
        "blank",
        "float labels",
        "colour",
        "background not the most common",
    ],
)
def test_images_are_not_labels(what):
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:64, 0:80]
    if what == "8-bit grey picture":
        grey = (yy + xx) * 1.4 + rng.normal(0, 6, yy.shape)
        image, axes = grey.clip(0, 255).astype(np.uint8), "yx"
    elif what == "dark 8-bit picture with few levels":  # black border, 0..20 inside, noisy
        image, axes = np.zeros((64, 80), np.uint8), "yx"
        image[20:44, 20:60] = rng.integers(0, 21, (24, 40))
    elif what == "CT in integer HU":
        image, axes = (_organs().astype(np.int16) * 40 - 1000), "zyx"
    elif what == "CT stored unsigned":  # 0 outside the field of view, raw values inside
        image, axes = np.zeros((4, 64, 80), np.uint16), "zyx"
        image[:, 8:56, 8:72] = rng.integers(900, 1200, (4, 48, 64))
    elif what == "blank":
        image, axes = np.zeros((4, 8, 8), np.int16), "zyx"
    elif what == "float labels":
        image, axes = _organs().astype(np.float32), "zyx"
    elif what == "colour":
        image, axes = np.stack([_organs()[5]] * 3, axis=-1), "yxc"
    else:
        image, axes = np.ones((4, 8, 8), np.uint8), "zyx"
        image[:, :2] = 0
    assert labels_by_content(image, axes) is None


def test_brain_nifti_opens_as_labels_with_its_reason(tmp_path):
    seg = _organs()
    [(data, kwargs, kind)] = file_layers(_nifti(tmp_path / "brain.nii.gz", seg.T))
    assert kind == "labels" and data.dtype == np.uint8
    np.testing.assert_array_equal(data, seg)
    meta = kwargs["metadata"]
    assert meta["labels_reason"] == (
        "integer voxels with 5 values (0 the most common) that agree between neighbours"
    )
    assert meta["axes"] == "zyx" and kwargs["scale"] == pytest.approx((2.5, 0.7, 0.8))
    assert kwargs["features"]["name"] == ["background"] + [f"label {k}" for k in range(1, 5)]


def test_content_labels_take_names_from_dataset_json(tmp_path):
    (tmp_path / "dataset.json").write_text('{"labels": {"0": "background", "1": "tumour"}}')
    [(_, kwargs, kind)] = file_layers(_nifti(tmp_path / "brain.nii.gz", _organs(n=1).T))
    assert kind == "labels" and kwargs["metadata"]["structures"] == {1: "tumour"}


def test_png_mask_0_255_without_a_telling_name_is_labels_0_1(tmp_path):
    from PIL import Image

    mask = (_organs(n=1)[5] * 255).astype(np.uint8)
    Image.fromarray(mask).save(tmp_path / "ISIC_0001.png")
    [(data, _, kind)] = file_layers(tmp_path / "ISIC_0001.png")
    assert kind == "labels" and set(np.unique(data)) == {0, 1}


def test_name_rule_reason_and_dicom_never_by_content(tmp_path):
    import sys
    from pathlib import Path

    [(_, kwargs, kind)] = file_layers(_nifti(tmp_path / "case_seg.nii.gz", _organs().T))
    assert kind == "labels"
    assert kwargs["metadata"]["labels_reason"] == "its name or folder says it holds labels"
    sys.path.insert(0, str(Path(__file__).resolve().parent / "io"))
    from dicom_factory import pydicom_file

    dcm = pydicom_file(tmp_path / "sc.dcm", _organs()[5].astype(np.uint16), modality="OT")
    assert file_layers(dcm)[0][2] == "image"  # a DICOM object is an acquisition
