"""NaN voxels in images: kept, shown, counted, and filled only where a model needs numbers.

NaN policy (design)
-------------------
FSL/SPM resampling pads the outside of the field of view with NaN. Such images open:

* **Reading** keeps NaN in the image array; ``case.meta["nan_count"]`` holds the
  number of NaN voxels and ``case.meta["warnings"]`` says it in one line. Infinite
  values are still refused (no software writes them on purpose). Label maps with
  NaN are still refused: a label id must be a whole number.
* **napari** shows the image with contrast limits from the finite voxels and adds a
  Labels layer ``"<name> NaN"`` marking where the NaN voxels are, and a notification
  says how many there are.
* **``segeval inspect``** reports the NaN count and the intensity range of the
  finite voxels.
* **Metrics** are computed on label maps, which cannot hold NaN, so they are
  unaffected.
* **Models** (dense and promptable preprocessing) see NaN replaced by the minimum
  finite intensity of the image -- the background of a padded scan -- via
  :func:`fill_nan`; predictions in the padded region are therefore background-like.
  An image whose voxels are all NaN is refused.
"""

from __future__ import annotations

import numpy as np

from napari_segeval._errors import InvalidImageError


def nan_count(image: np.ndarray) -> int:
    """Number of NaN voxels (0 for integer images).

    Examples
    --------
    >>> nan_count(np.array([1.0, np.nan, np.nan])), nan_count(np.arange(3))
    (2, 0)
    """
    a = np.asarray(image)
    return int(np.count_nonzero(np.isnan(a))) if a.dtype.kind in "fc" else 0


def nan_mask(image: np.ndarray) -> np.ndarray:
    """uint8 map, 1 where ``image`` is NaN (spatial axes only: a colour voxel is NaN
    when any channel is).

    Examples
    --------
    >>> nan_mask(np.array([[0.0, np.nan]])).tolist()
    [[0, 1]]
    """
    a = np.asarray(image)
    if a.dtype.kind not in "fc":
        return np.zeros(a.shape, np.uint8)
    return np.isnan(a).astype(np.uint8)


def fill_nan(image: np.ndarray, source: object = "image") -> tuple[np.ndarray, int]:
    """Copy of ``image`` with NaN replaced by its minimum finite value, and the count.

    Integer images and images without NaN are returned as they are (no copy).

    Examples
    --------
    >>> out, n = fill_nan(np.array([np.nan, 2.0, 5.0]))
    >>> out.tolist(), n
    ([2.0, 2.0, 5.0], 1)
    """
    a = np.asarray(image)
    n = nan_count(a)
    if n == 0:
        return a, 0
    if n == a.size:
        raise InvalidImageError(f"{source}: every voxel is NaN (no image data)")
    filled = a.copy()
    filled[np.isnan(filled)] = np.nanmin(a)
    return filled, n
