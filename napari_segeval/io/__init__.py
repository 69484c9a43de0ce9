"""Reading and writing cases: images, volumes, videos and reference labels.

Orientation convention
----------------------
Every reader returns arrays slowest axis first — ``(z, y, x)`` volumes, ``(t, y, x)``
grey videos, ``(t, y, x, c)`` colour videos, ``(y, x)`` / ``(y, x, c)`` 2D images —
with a :class:`Geometry` in ITK's LPS convention (spacing per array axis, origin
and direction as ITK reports them; see :mod:`napari_segeval.io.case`).

* NIfTI (RAS): the nibabel ``(i, j, k)`` array is transposed to ``(k, j, i)`` and the
  affine's first two rows are negated (RAS -> LPS); writing does the reverse, so
  read -> write -> read is exact and a label written with an image's geometry has
  the image's affine.
* MHA/MHD/NRRD, Analyze 7.5, MINC2: SimpleITK's array order and geometry are used
  as they are.
* DICOM: geometry from the headers through pydicom, in ITK's convention (slices
  sorted along the normal ``row x column``, origin the first slice's position); see
  :mod:`~napari_segeval.io._dicom_geometry` and :mod:`~napari_segeval.io._dicom_series`.
* A grid with a single slice is a 2D ``"yx"`` image that keeps its 3D placement in
  ``Geometry.plane`` (see :mod:`~napari_segeval.io.case`).
* PNG/JPG/TIFF/BMP, videos, frame folders: spacing 1, origin 0, identity direction
  (``case.meta["has_geometry"]`` is False).

Supported inputs: ``.nii``, ``.nii.gz`` (4D files as ``"tzyx"`` time series), ``.mha``,
``.mhd`` (+ raw), ``.nrrd``, ``.nhdr``, Analyze 7.5 ``.hdr``/``.img``, MINC2 ``.mnc``,
DICOM files (``.dcm``, ``.dicom``, ``.dcm.gz``, or any name with the ``DICM`` marker or
a preamble-less DICOM start; multi-frame and RT dose included, colour ones -- RGB, YBR,
palette -- as RGB, see :mod:`~napari_segeval.io._dicom_colour`), DICOM folders and
DICOMDIR exports (every series listed by :func:`list_series`; the largest opened
unless one is chosen), ``.mp4``/``.avi``/``.mov``/``.mkv`` (PyAV, ``video`` extra),
folders of image frames, and single PNG/JPG/BMP/TIFF images. CIFTI, GIFTI,
streamlines and meshes are refused: they are not images on a grid. Heavy libraries
(nibabel, SimpleITK, pydicom, PyAV, Pillow, tifffile) are imported only when a file
of their kind is read or written, and their warnings are silenced during reads
(:mod:`~napari_segeval.io._quiet`); what matters is in ``case.meta["warnings"]``.
NaN voxels are kept (:mod:`~napari_segeval.io._nan`). Multi-channel volumes (one file
per channel, or a 4D file whose fourth axis is channels, as in the MSD) are read on
request by :func:`read_channels` as ``"czyx"`` cases (:mod:`~napari_segeval.io._channels`).
"""

from __future__ import annotations

from napari_segeval.io._channels import read_channels, select_channel
from napari_segeval.io._dataset_json import load_color_table, load_dataset_json, structure_names
from napari_segeval.io._dicom_series import SeriesInfo, list_series
from napari_segeval.io._labels import resolve_structure, structure_label
from napari_segeval.io._nan import fill_nan, nan_mask
from napari_segeval.io.case import Case, Geometry
from napari_segeval.io.read import read_case, read_image, read_labels, select_volume
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
