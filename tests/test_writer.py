import nibabel as nib
import numpy as np
import pytest

from napari_segeval._errors import WriteError
from napari_segeval._reader import read_layers
from napari_segeval._writer import write_labels_layer
from napari_segeval.io import read_labels


def _source(tmp_path):
    affine = np.array([[0.0, -0.8, 0, 12.5], [0.7, 0, 0, -30.0], [0, 0, 2.5, 7.0], [0, 0, 0, 1]])
    path = tmp_path / "ct.nii.gz"
    nib.save(nib.Nifti1Image(np.zeros((5, 6, 4), np.int16), affine), str(path))
    return path, affine


def test_writes_with_source_geometry_from_metadata(tmp_path):
    src, affine = _source(tmp_path)
    [(data, kwargs, _)] = read_layers(str(src))
    pred = np.zeros(data.shape, np.int32)
    pred[1, 2, 3] = 2
    out = str(tmp_path / "pred.nii.gz")
    assert write_labels_layer(out, pred, kwargs) == [out]
    np.testing.assert_allclose(nib.load(out).affine, affine, atol=1e-6)
    labels, _, _ = read_labels(out)
    np.testing.assert_array_equal(labels, pred)


@pytest.mark.parametrize("ext", [".nii", ".mha", ".nrrd"])
def test_falls_back_to_scale_and_translate(tmp_path, ext):
    out = str(tmp_path / f"p{ext}")
    write_labels_layer(
        out, np.ones((2, 3, 4), np.uint8), {"scale": (3.0, 1.0, 0.5), "translate": (9.0, 8.0, 7.0)}
    )
    _, geometry, _ = read_labels(out)
    assert geometry.spacing == (3.0, 1.0, 0.5) and geometry.origin == (7.0, 8.0, 9.0)


def test_refuses_existing_and_bad_extension(tmp_path):
    out = tmp_path / "p.mha"
    out.write_bytes(b"keep")
    with pytest.raises(WriteError, match="file exists"):
        write_labels_layer(str(out), np.ones((2, 2), np.uint8), {})
    assert out.read_bytes() == b"keep"
    with pytest.raises(WriteError, match="labels can be saved as"):
        write_labels_layer(str(tmp_path / "p.png"), np.ones((2, 2), np.uint8), {})


def test_viewer_save_layer(make_napari_viewer, tmp_path):
    viewer = make_napari_viewer()
    layer = viewer.add_labels(np.eye(4, dtype=np.uint8)[None].repeat(2, 0), scale=(2.0, 0.5, 0.5))
    out = str(tmp_path / "saved.nii.gz")
    written = layer.save(out, plugin="napari-segeval")
    assert written == [out]
    assert read_labels(out)[1].spacing == (2.0, 0.5, 0.5)
