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
* MHA/MHD/NRRD/DICOM: SimpleITK's array order and geometry are used as they are.
* PNG/JPG/TIFF/BMP, videos, frame folders: spacing 1, origin 0, identity direction
  (``case.meta["has_geometry"]`` is False).

Supported inputs: ``.nii``, ``.nii.gz``, ``.mha``, ``.mhd`` (+ raw), ``.nrrd``,
``.nhdr``, DICOM files (``.dcm``, ``.dicom`` or no extension with the ``DICM``
marker; multi-frame included) and DICOM series folders (largest series),
``.mp4``/``.avi``/``.mov``/``.mkv`` (PyAV, ``video`` extra), folders of image frames,
and single PNG/JPG/BMP/TIFF images. Heavy libraries (nibabel, SimpleITK, PyAV,
Pillow, tifffile) are imported only when a file of their kind is read or written.
"""

from __future__ import annotations

from napari_segeval.io._dataset_json import load_color_table, load_dataset_json, structure_names
from napari_segeval.io._labels import resolve_structure, structure_label
from napari_segeval.io.case import Case, Geometry
from napari_segeval.io.read import read_case, read_image, read_labels
from napari_segeval.io.write import write_image, write_labels

__all__ = [
    "Case",
    "Geometry",
    "load_color_table",
    "load_dataset_json",
    "read_case",
    "read_image",
    "read_labels",
    "resolve_structure",
    "structure_label",
    "structure_names",
    "write_image",
    "write_labels",
]
