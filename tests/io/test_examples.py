"""The examples of the io package's internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.io._dicom.describe_pixels": """\
>>> from pydicom import Dataset
>>> ds = Dataset()
>>> ds.PhotometricInterpretation, ds.SamplesPerPixel, ds.BitsAllocated = "PALETTE COLOR", 1, 8
>>> describe_pixels(ds)
'PALETTE COLOR shown as RGB through its palette, Implicit VR Little Endian'
""",
    "napari_segeval.io._formats.sniff": """\
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "x"
>>> _ = p.write_bytes(b"\\x08\\x00\\x16\\x00UI\\x1a\\x001.2.840.10008.5.1.4.1.1.2")
>>> sniff(p), sniff(p.parent / "missing")
(True, False)
""",
    "napari_segeval.io._dicom_files.not_image_reason": """\
>>> not_image_reason({"Modality": "RTSTRUCT"})
'DICOM RTSTRUCT is an RT structure set (contours), not an image on a grid'
""",
    "napari_segeval.io._dicom_geometry.orientation": """\
>>> orientation([0, 0, 0, 0, 0, 0])[1]
'ImageOrientationPatient (0, 0, 0, 0, 0, 0) is not two unit vectors at right angles'
""",
    "napari_segeval.io._dicom_geometry.ultrasound_spacing": """\
>>> from pydicom import Dataset
>>> r = Dataset()
>>> r.PhysicalUnitsXDirection = r.PhysicalUnitsYDirection = 3
>>> r.PhysicalDeltaX, r.PhysicalDeltaY = 0.02, 0.03
>>> ds = Dataset()
>>> ds.SequenceOfUltrasoundRegions = [r]
>>> ultrasound_spacing(ds)
((0.3, 0.2), [])
""",
    "napari_segeval.io._dicom_geometry.plane_name": """\
>>> plane_name(np.array([0, 0, 1.0])), plane_name(np.array([1.0, 0, 0]))
('axial', 'sagittal')
>>> plane_name(np.array([0.0, 0.1, 0.995])), plane_name(None)
('oblique', 'unknown')
""",
    "napari_segeval.io._dicom_geometry.is_colour": """\
>>> is_colour({"SamplesPerPixel": 3}), is_colour({"PhotometricInterpretation": "PALETTE COLOR"})
(True, True)
>>> is_colour({"SamplesPerPixel": 1, "PhotometricInterpretation": "MONOCHROME2"})
False
""",
    "napari_segeval.io._dicom_geometry.samples_stored": """\
>>> samples_stored({"SamplesPerPixel": 3, "PhotometricInterpretation": "YBR_FULL_422"})
2
""",
    "napari_segeval.io.case.kind_of_axes": """\
>>> [kind_of_axes(a) for a in ("zyx", "czyx", "tyxc", "yx", "tzyx")]
['volume', 'volume', 'video', 'image', 'series']
>>> kind_of_axes("xyz")
Traceback (most recent call last):
...
ValueError: unknown axes 'xyz': expected one of czyx, tyx, tyxc, tzyx, yx, yxc, zyx
""",
    "napari_segeval.io._quiet.one_line_errors": """\
>>> with one_line_errors("x.nii: cannot read NIfTI file"):
...     raise ValueError("bad header")
Traceback (most recent call last):
...
napari_segeval._errors.ReadError: x.nii: cannot read NIfTI file (bad header)
""",
    "napari_segeval.io._quiet.reason": """\
>>> reason(ValueError("negative count"))
'negative count'
>>> reason(KeyError())
'the file is corrupt'
>>> msg = ("Exception thrown in SimpleITK ImageFileReader_Execute: /src/sitkImageReaderBase.cxx:97:"
...        "\\nsitk::ERROR: Unable to determine ImageIO reader for \\"/x.img\\"")
>>> reason(RuntimeError(msg))
'Unable to determine ImageIO reader for "/x.img"'
>>> reason(RuntimeError("ITK ERROR: GDCMImageIO(0x55e3d0): Failed to change syntax"))
'Failed to change syntax'
""",
    "napari_segeval.io._dataset_json.dataset_channels": """\
>>> dataset_channels({"modality": {"0": "FLAIR", "1": "T1w", "2": "t1gd", "3": "T2w"}})
('FLAIR', 'T1w', 't1gd', 'T2w')
>>> dataset_channels({"channel_names": {"1": "ADC", "0": "T2"}}), dataset_channels({})
(('T2', 'ADC'), ())
""",
    "napari_segeval.io.read.as_channels": """\
>>> from napari_segeval.io.case import Geometry
>>> g = Geometry((1.0, 2.0, 1.0, 1.0), (0, 0, 0, 0), tuple(np.eye(4).ravel()))
>>> c = as_channels(Case(np.zeros((2, 3, 4, 5), np.float32), g, axes="tzyx"))
>>> c.axes, c.n_channels, c.spatial_shape, c.spacing
('czyx', 2, (3, 4, 5), (2.0, 1.0, 1.0))
""",
    "napari_segeval.io._formats.suffix": """\
>>> suffix("a/CT_001.NII.GZ"), suffix("x.mha"), suffix("folder")
('.nii.gz', '.mha', '')
""",
    "napari_segeval.io._formats.output_formats": """\
>>> output_formats("a/ct.nii.gz", "zyx"), output_formats("a/ct.mhd", "zyx")
(('.nii.gz', '.nii.gz'), ('.mha', '.mha'))
>>> output_formats("a/polyp.jpg", "yxc"), output_formats("a/cells.tif", "yx")
(('.png', '.tif'), ('.tif', '.tif'))
>>> output_formats("a/echo.mp4", "tyx"), output_formats("a/frames", "tyxc")
(('.mha', '.mha'), ('.mha', '.mha'))
""",
    "napari_segeval.io._formats.natural_key": """\
>>> sorted(["f10.png", "f2.png", "f1.png"], key=natural_key)
['f1.png', 'f2.png', 'f10.png']
""",
    "napari_segeval.io._labels.parse_color_table": """\
>>> c, ids, names = parse_color_table({(255, 0, 0): (1, "neoplastic"), (0, 255, 0): 2})
>>> c.astype(int).tolist(), ids.tolist(), names
([[255, 0, 0], [0, 255, 0], [0, 0, 0]], [1, 2, 0], {1: 'neoplastic'})
""",
    "napari_segeval.io.read.labels_of_image": """\
>>> c = Case(np.array([[0, 255], [255, 0]], np.uint8), Geometry.identity(2), axes="yx",
...          meta={"has_geometry": False})
>>> labels_of_image(c)[0].tolist()
[[0, 1], [1, 0]]
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
