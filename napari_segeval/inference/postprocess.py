"""Connected-component post-processing of label maps.

* Organs: keep the largest connected component of each structure
  (:func:`keep_largest_component`).
* Lesions: remove components smaller than a volume threshold in mm^3, or merge
  them into the neighbouring structure (:func:`remove_small_components`). The
  default threshold follows nnU-Net v1: the smallest "largest component" volume
  seen in a training set's reference labels (:func:`min_volume_from_references`).

:func:`postprocess` applies both, each optional, and returns a record of what it did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
from scipy import ndimage

#: what post-processing does with a small lesion component: remove it or merge it
LesionMode = Literal["remove", "merge"]


def _structure(ndim: int, connectivity: int | None) -> np.ndarray:
    return ndimage.generate_binary_structure(ndim, connectivity or ndim)


def keep_largest_component(
    labels: np.ndarray, label_ids: Iterable[int], *, connectivity: int | None = None
) -> np.ndarray:
    """Keep only the largest connected component of each label in ``label_ids``.

    Removed voxels become background (0). ``connectivity`` is scipy's (1 = faces;
    default full: 26-neighbourhood in 3D).

    Examples
    --------
    >>> lab = np.array([[1, 1, 0, 1], [0, 0, 0, 0], [2, 0, 2, 2]])
    >>> keep_largest_component(lab, [1, 2])
    array([[1, 1, 0, 0],
           [0, 0, 0, 0],
           [0, 0, 2, 2]])
    """
    out = labels.copy()
    st = _structure(labels.ndim, connectivity)
    for k in label_ids:
        comp, n = ndimage.label(labels == k, st)
        if n <= 1:
            continue
        sizes = np.bincount(comp.ravel())[1:]
        keep = int(np.argmax(sizes)) + 1
        out[(comp > 0) & (comp != keep)] = 0
    return out


def _neighbour_label(labels: np.ndarray, mask: np.ndarray, own: int, st: np.ndarray) -> int:
    ring = ndimage.binary_dilation(mask, st) & ~mask
    vals = labels[ring]
    vals = vals[(vals != own) & (vals != 0)]
    if vals.size == 0:
        return 0
    return int(np.bincount(vals.astype(np.int64)).argmax())


def remove_small_components(
    labels: np.ndarray,
    label_id: int,
    min_volume_mm3: float,
    spacing: Sequence[float],
    *,
    mode: LesionMode = "remove",
    connectivity: int | None = None,
) -> tuple[np.ndarray, int]:
    """Drop (or merge) components of ``label_id`` smaller than ``min_volume_mm3``.

    Parameters
    ----------
    labels : numpy.ndarray
        Integer label map.
    label_id : int
        Structure to clean.
    min_volume_mm3 : float
        Components with a smaller volume are changed.
    spacing : sequence of float
        Voxel size, mm.
    mode : {"remove", "merge"}
        ``"remove"`` sets them to background; ``"merge"`` gives them the most
        frequent other non-zero label touching them (background when none).
    connectivity : int, optional
        scipy connectivity (default full).

    Returns
    -------
    (numpy.ndarray, int)
        Cleaned map and the number of components changed.

    Examples
    --------
    >>> lab = np.zeros((1, 6, 6), np.uint8); lab[0, :, :3] = 1
    >>> lab[0, 0, 5] = 5; lab[0, 2, 2] = 5; lab[0, 4:6, 4:6] = 5
    >>> out, n = remove_small_components(lab, 5, 2.0, (1, 1, 1), mode="merge")
    >>> n, int(out[0, 0, 5]), int(out[0, 2, 2]), int(out[0, 5, 5])
    (2, 0, 1, 5)
    """
    if mode not in ("remove", "merge"):
        raise ValueError(f"mode must be 'remove' or 'merge', got {mode!r}")
    st = _structure(labels.ndim, connectivity)
    comp, n = ndimage.label(labels == label_id, st)
    if n == 0:
        return labels.copy(), 0
    voxel = float(np.prod(spacing))
    sizes = np.bincount(comp.ravel())[1:] * voxel
    out = labels.copy()
    changed = 0
    for i in np.flatnonzero(sizes < min_volume_mm3):
        mask = comp == i + 1
        out[mask] = _neighbour_label(labels, mask, label_id, st) if mode == "merge" else 0
        changed += 1
    return out, changed


def largest_component_volume(
    labels: np.ndarray, label_id: int, spacing: Sequence[float], connectivity: int | None = None
) -> float:
    """Volume (mm^3) of the largest component of ``label_id`` (0 when absent).

    Examples
    --------
    >>> lab = np.zeros((3, 3, 3), np.uint8); lab[0, 0, :2] = 1; lab[2, 2, 2] = 1
    >>> largest_component_volume(lab, 1, (2.0, 1.0, 1.0))
    4.0
    """
    comp, n = ndimage.label(labels == label_id, _structure(labels.ndim, connectivity))
    if n == 0:
        return 0.0
    return float(np.bincount(comp.ravel())[1:].max() * np.prod(spacing))


def min_volume_from_references(
    references: Iterable[tuple[np.ndarray, Sequence[float]]], label_ids: Iterable[int]
) -> dict[int, float]:
    """nnU-Net v1 threshold: smallest largest-component volume per label over references.

    Cases without the label are skipped; labels never seen map to 0.

    Examples
    --------
    >>> a = np.zeros((4, 4, 4), np.uint8); a[:2, :2, :2] = 5
    >>> b = np.zeros((4, 4, 4), np.uint8); b[0, 0, 0] = 5; b[3, 3, :3] = 5
    >>> min_volume_from_references([(a, (1, 1, 1)), (b, (1, 1, 1))], [5])
    {5: 3.0}
    """
    ids = [int(k) for k in label_ids]
    best: dict[int, float] = {k: np.inf for k in ids}
    for labels, spacing in references:
        for k in ids:
            v = largest_component_volume(labels, k, spacing)
            if v > 0:
                best[k] = min(best[k], v)
    return {k: (0.0 if np.isinf(v) else float(v)) for k, v in best.items()}


@dataclass
class PostprocessConfig:
    """Which post-processing steps to apply.

    Attributes
    ----------
    organs : tuple of int
        Labels reduced to their largest component (empty: step off).
    lesions : tuple of int
        Labels whose small components are removed/merged (empty: step off).
    lesion_min_mm3 : dict of int to float
        Threshold per lesion label (missing: that label is left alone).
    lesion_mode : {"remove", "merge"}
        What happens to small lesion components.
    """

    organs: tuple[int, ...] = ()
    lesions: tuple[int, ...] = ()
    lesion_min_mm3: dict[int, float] = field(default_factory=dict)
    lesion_mode: LesionMode = "remove"

    def to_dict(self) -> dict:
        """Plain dict (for JSON records)."""
        d = asdict(self)
        d["lesion_min_mm3"] = {str(k): v for k, v in self.lesion_min_mm3.items()}
        return d


def postprocess(
    labels: np.ndarray, spacing: Sequence[float], config: PostprocessConfig
) -> tuple[np.ndarray, dict]:
    """Apply the steps of ``config`` and return the map and a record of the changes.

    Examples
    --------
    >>> lab = np.zeros((1, 5, 5), np.uint8); lab[0, :2, :2] = 1; lab[0, 4, 4] = 1
    >>> out, rec = postprocess(lab, (1, 1, 1), PostprocessConfig(organs=(1,)))
    >>> int(out.sum()), rec["largest_component"]
    (4, [1])
    """
    out = keep_largest_component(labels, config.organs) if config.organs else labels.copy()
    removed: dict[str, int] = {}
    for k in config.lesions:
        thr = config.lesion_min_mm3.get(k)
        if thr is None or thr <= 0:
            continue
        out, n = remove_small_components(out, k, thr, spacing, mode=config.lesion_mode)
        removed[str(k)] = n
    record = {
        "largest_component": list(config.organs),
        "small_lesions": removed,
        "config": config.to_dict(),
    }
    return out, record


def config_from_mapping(d: Mapping) -> PostprocessConfig:
    """Build a :class:`PostprocessConfig` from a (JSON) mapping.

    Examples
    --------
    >>> config_from_mapping({"organs": [1], "lesion_min_mm3": {"5": 10}}).lesion_min_mm3
    {5: 10.0}
    """
    return PostprocessConfig(
        organs=tuple(int(k) for k in d.get("organs", ())),
        lesions=tuple(int(k) for k in d.get("lesions", ())),
        lesion_min_mm3={int(k): float(v) for k, v in d.get("lesion_min_mm3", {}).items()},
        lesion_mode=d.get("lesion_mode", "remove"),
    )
