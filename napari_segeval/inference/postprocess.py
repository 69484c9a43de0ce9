"""Connected-component post-processing of label maps: organs keep their largest component,
lesions lose (or merge) components below a volume (nnU-Net v1's threshold by default).
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
    """Keep only the largest connected component of each label (scipy's ``connectivity``:
    1 faces, default full)."""
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
    vals = labels[ndimage.binary_dilation(mask, st) & ~mask]
    vals = vals[(vals != own) & (vals != 0)]
    return int(np.bincount(vals.astype(np.int64)).argmax()) if vals.size else 0


def remove_small_components(
    labels: np.ndarray,
    label_id: int,
    min_volume_mm3: float,
    spacing: Sequence[float],
    *,
    mode: LesionMode = "remove",
) -> tuple[np.ndarray, int]:
    """Set components of ``label_id`` below ``min_volume_mm3`` to background, or (``merge``)
    to the most frequent other label touching them; also the number changed."""
    if mode not in ("remove", "merge"):
        raise ValueError(f"mode must be 'remove' or 'merge', got {mode!r}")
    st = _structure(labels.ndim, None)
    comp, n = ndimage.label(labels == label_id, st)
    if n == 0:
        return labels.copy(), 0
    sizes = np.bincount(comp.ravel())[1:] * float(np.prod(spacing))
    out = labels.copy()
    small = np.flatnonzero(sizes < min_volume_mm3)
    for i in small:
        mask = comp == i + 1
        out[mask] = _neighbour_label(labels, mask, label_id, st) if mode == "merge" else 0
    return out, len(small)


def largest_component_volume(labels: np.ndarray, label_id: int, spacing: Sequence[float]) -> float:
    """Volume (mm^3) of the largest component of ``label_id`` (0 when absent)."""
    comp, n = ndimage.label(labels == label_id, _structure(labels.ndim, None))
    return float(np.bincount(comp.ravel())[1:].max() * np.prod(spacing)) if n else 0.0


def min_volume_from_references(
    references: Iterable[tuple[np.ndarray, Sequence[float]]], label_ids: Iterable[int]
) -> dict[int, float]:
    """nnU-Net v1's threshold: the smallest largest-component volume per label over
    references that have it (0: never seen)."""
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
    """Which post-processing steps to apply: ``organs`` keep their largest component,
    ``lesions`` lose (``lesion_mode``: or merge) components below their
    ``lesion_min_mm3`` (a label without one is left alone); empty: step off."""

    organs: tuple[int, ...] = ()
    lesions: tuple[int, ...] = ()
    lesion_min_mm3: dict[int, float] = field(default_factory=dict)
    lesion_mode: LesionMode = "remove"

    def to_dict(self) -> dict:
        """Plain dict (for JSON records)."""
        lesion_min_mm3 = {str(k): v for k, v in self.lesion_min_mm3.items()}
        return {**asdict(self), "lesion_min_mm3": lesion_min_mm3}


def postprocess(
    labels: np.ndarray, spacing: Sequence[float], config: PostprocessConfig
) -> tuple[np.ndarray, dict]:
    """Apply the steps of ``config``; return the map and a record of the changes."""
    out = keep_largest_component(labels, config.organs) if config.organs else labels.copy()
    removed: dict[str, int] = {}
    for k in config.lesions:
        thr = config.lesion_min_mm3.get(k)
        if thr is None or thr <= 0:
            continue
        out, n = remove_small_components(out, k, thr, spacing, mode=config.lesion_mode)
        removed[str(k)] = n
    return out, {
        "largest_component": list(config.organs),
        "small_lesions": removed,
        "config": config.to_dict(),
    }


def config_from_mapping(d: Mapping) -> PostprocessConfig:
    """Build a :class:`PostprocessConfig` from a (JSON) mapping."""
    return PostprocessConfig(
        organs=tuple(int(k) for k in d.get("organs", ())),
        lesions=tuple(int(k) for k in d.get("lesions", ())),
        lesion_min_mm3={int(k): float(v) for k, v in d.get("lesion_min_mm3", {}).items()},
        lesion_mode=d.get("lesion_mode", "remove"),
    )
