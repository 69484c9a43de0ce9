"""Incremental overlap metrics for the viewer: recount only the slices that changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from napari_segeval._names import unnamed_structures
from napari_segeval.metrics.overlap import as_labels, overlap_from_counts
from napari_segeval.metrics.slices import dice_from_counts, per_slice_counts, slice_counts

Region = int | slice | tuple | None


class LiveMetrics:
    """Per-structure overlap metrics kept current while label maps are edited.

    Holds per-slice counts (true positives, reference and predicted voxels per
    label) along axis 0. The arrays are kept by reference, so painting in napari
    edits them in place; call :meth:`update` with the edited slices (or region)
    and only those slices are counted again.

    Parameters
    ----------
    reference, prediction : numpy.ndarray
        Label maps of one shape (axis 0 is the slice/frame axis).
    spacing : sequence of float, optional
        Voxel spacing in mm (volumes in ml).
    structures : mapping of int to str, optional
        Labels to report with names; default every non-zero label present.
    """

    def __init__(
        self,
        reference: np.ndarray,
        prediction: np.ndarray,
        spacing: Sequence[float] | None = None,
        structures: Mapping[int, str] | None = None,
    ) -> None:
        self._settings(spacing, structures)
        self._ref = as_labels(reference, "reference")
        self._pred = as_labels(prediction, "prediction")
        self._recount_all()

    # -- state -----------------------------------------------------------
    def _settings(
        self, spacing: Sequence[float] | None, structures: Mapping[int, str] | None
    ) -> None:
        self.spacing = None if spacing is None else tuple(float(s) for s in spacing)
        self.structures = (
            None if structures is None else {int(k): str(v) for k, v in structures.items()}
        )

    def _recount_all(self) -> None:
        top = max(int(self._ref.max(initial=0)), int(self._pred.max(initial=0)))
        if self.structures:
            top = max(top, *self.structures)
        self._n = top + 1
        self._counts = per_slice_counts(self._ref, self._pred, 0, self._n)
        self._total = self._counts.sum(axis=0)

    def set_reference(self, reference: np.ndarray) -> None:
        """Replace the reference label map and count everything again."""
        self._ref = as_labels(reference, "reference")
        self._recount_all()

    def set_prediction(self, prediction: np.ndarray) -> None:
        """Replace the prediction label map and count everything again."""
        self._pred = as_labels(prediction, "prediction")
        self._recount_all()

    def update(self, region: Region = None) -> None:
        """Recount the slices a region touches, from the current arrays.

        Parameters
        ----------
        region : int, slice, tuple of slices/ints, or None
            A slice index or slice range along axis 0, or a bounding region whose
            first element selects along axis 0 (the whole slices are recounted).
            None recounts everything.
        """
        if region is None:
            self._recount_all()
            return
        first, n = region[0] if isinstance(region, tuple) else region, self._ref.shape[0]
        indices = range(*first.indices(n)) if isinstance(first, slice) else [int(first) % n]
        for i in indices:
            r, p = self._ref[i], self._pred[i]
            top = max(int(r.max(initial=0)), int(p.max(initial=0)))
            if top >= self._n:  # a new label was painted
                self._recount_all()
                return
            new = slice_counts(r, p, self._n)
            self._total += new - self._counts[i]
            self._counts[i] = new

    # -- results -----------------------------------------------------------
    def _labels(self) -> dict[int, str]:
        if self.structures is not None:
            return dict(sorted(self.structures.items()))
        present = np.flatnonzero(self._total[1] + self._total[2])
        return unnamed_structures(present)

    def table(self, empty: str = "one") -> list[dict]:
        """Current overlap metrics, one row per structure.

        Keys: label, name, dice, iou, precision, recall, volume_ref_ml,
        volume_pred_ml, tp, fp, fn (``empty`` as in
        :func:`~napari_segeval.metrics.overlap.overlap_from_counts`).
        """
        labels = self._labels()
        tp, ref_n, pred_n = self._total[:, list(labels)]
        m = overlap_from_counts(tp, ref_n, pred_n, empty=empty)
        voxel_ml = float(np.prod(self.spacing)) / 1000.0 if self.spacing else 0.001
        return [
            {
                "label": label,
                "name": name,
                **{k: float(m[k][i]) for k in ("dice", "iou", "precision", "recall")},
                "volume_ref_ml": int(ref_n[i]) * voxel_ml,
                "volume_pred_ml": int(pred_n[i]) * voxel_ml,
                "tp": int(tp[i]),
                "fp": int(pred_n[i] - tp[i]),
                "fn": int(ref_n[i] - tp[i]),
            }
            for i, (label, name) in enumerate(labels.items())
        ]

    def adopt(
        self,
        reference: np.ndarray,
        prediction: np.ndarray,
        spacing: Sequence[float] | None = None,
        structures: Mapping[int, str] | None = None,
    ) -> bool:
        """Take new settings if these counts are of ``reference`` and ``prediction`` themselves.

        How counts made elsewhere (the results browser's worker thread) reach the Dice
        panel: True when both arrays are the very objects counted (not copies) and every
        structure id is counted; then ``spacing`` and ``structures`` replace the old ones.
        False leaves the counter unchanged (count afresh).

        Examples
        --------
        >>> ref = np.zeros((2, 4, 4), np.uint8); ref[:, 1:3, 1:3] = 1
        >>> live = LiveMetrics(ref, ref.copy())
        >>> live.adopt(ref, live._pred, (2.0, 1.0, 1.0), {1: "liver"}), live.adopt(ref, ref)
        (True, False)
        """
        if self._ref is not np.asarray(reference) or self._pred is not np.asarray(prediction):
            return False
        if structures and max(structures) >= self._n:
            return False
        self._settings(spacing, structures)
        return True

    def reference_labels(self) -> list[int]:
        """Non-zero labels present in the reference, ascending."""
        return [int(v) for v in np.flatnonzero(self._total[1]) if v != 0]

    def slice_counts(self, label: int) -> np.ndarray:
        """``(slices, 3)`` true positives, reference and predicted voxels of ``label`` per slice."""
        if label >= self._n:  # never painted: absent from both maps on every slice
            return np.zeros((self._ref.shape[0], 3), np.int64)
        return self._counts[:, :, label].copy()

    def per_slice_dice(self, label: int, empty: str = "nan") -> np.ndarray:
        """Dice of one structure on every slice along axis 0."""
        return dice_from_counts(self.slice_counts(label)[..., None], empty)[:, 0]


__all__ = ["LiveMetrics"]
