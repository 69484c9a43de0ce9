"""Reading and writing cases: images, volumes, videos and reference labels.

Arrays are slowest axis first with a :class:`Geometry` in ITK's LPS convention (see
:mod:`napari_segeval.io.case`); NIfTI (RAS) is converted on read and back on write.
Inputs: NIfTI (4D as ``"tzyx"``), MHA/MHD, NRRD, Analyze 7.5, MINC2, DICOM files,
folders and DICOMDIR exports (colour as RGB), videos (PyAV, ``video`` extra), frame
folders and PNG/JPG/BMP/TIFF images; CIFTI, GIFTI, streamlines and meshes are refused.
Heavy libraries load only when a file of their kind is read; their warnings go to
``case.meta["warnings"]``. NaN voxels are kept; multi-channel volumes are read on request
by :func:`read_channels`.
"""

from __future__ import annotations

from napari_segeval.io._dataset_json import load_color_table, load_dataset_json, structure_names
from napari_segeval.io._dicom_series import SeriesInfo, list_series
from napari_segeval.io._labels import resolve_structure, structure_label
from napari_segeval.io._nan import fill_nan, nan_mask
from napari_segeval.io.case import Case, Geometry
from napari_segeval.io.read import (
    read_case,
    read_channels,
    read_image,
    read_labels,
    select_channel,
    select_volume,
)
from napari_segeval.io.write import write_image, write_labels

__all__ = [
    "Case",
    "Geometry",
    "SeriesInfo",
    "fill_nan",
    "list_series",
    "load_color_table",
    "load_dataset_json",
    "nan_mask",
    "read_case",
    "read_channels",
    "read_image",
    "read_labels",
    "resolve_structure",
    "select_channel",
    "select_volume",
    "structure_label",
    "structure_names",
    "write_image",
    "write_labels",
]
