"""The worklist of a run: risk rows written with the results, read back riskiest first.

:func:`risk_rows` and :func:`dense_risk_rows` turn a prediction's risk estimates
(:mod:`napari_segeval.uncertainty.risk`) into ``slices.csv`` rows; :func:`worklist`
reads a results folder's structures back riskiest first, with their flagged slices
(what ``segeval triage`` prints and the viewer opens).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import ReadError
from napari_segeval._names import CLEAN
from napari_segeval.metrics.catalog import as_float
from napari_segeval.metrics.overlap import mask_dice
from napari_segeval.uncertainty.risk import (
    Flag,
    RiskKind,
    RiskModel,
    Signal,
    SliceRisk,
    StructureRisk,
    structure_risk,
)

#: The flags of a slice in ``slices.csv``: their texts joined by this separator.
FLAG_SEPARATOR = "; "


def crop_slices(structure: Any) -> _CropSlices:
    """A :class:`~napari_segeval.propagation.result.StructureResult`'s probabilities by slice
    at full ``(H, W)`` size, made from its crop one slice at a time.

    Examples
    --------
    >>> from napari_segeval.propagation.result import StructureResult
    >>> s = StructureResult(1, (2, 1, 1), np.ones((1, 1, 1), np.float32),
    ...                     np.ones((1, 1, 1), bool), (4, 3, 3))
    >>> float(crop_slices(s)[2].sum()), float(crop_slices(s)[0].sum())
    (1.0, 0.0)
    """
    return _CropSlices(structure)


class _CropSlices:
    """See :func:`crop_slices`."""

    def __init__(self, s: Any) -> None:
        self._s = s

    def __getitem__(self, k: int) -> np.ndarray:
        s = self._s
        out = np.zeros(s.shape[1:], np.float32)
        z = int(k) - int(s.offset[0])
        if 0 <= z < s.probabilities.shape[0]:
            out[s.slices[1:]] = s.probabilities[z]
        return out


def risk_rows(
    structures: Mapping[int, Any],
    masks: Mapping[int, np.ndarray],
    names: Mapping[int, str],
    *,
    model: str,
    condition: str = CLEAN,
    reference: np.ndarray | None = None,
    others: Mapping[int, Sequence[np.ndarray]] | None = None,
) -> tuple[dict[int, StructureRisk], list[dict]]:
    """Each structure's risk and its ``slices.csv`` rows.

    Parameters
    ----------
    structures
        The propagation's structures (probabilities and trace), by label.
    masks
        Each structure's scored mask ``(n, H, W)``.
    names
        Structure names.
    model, condition
        What the rows say ran.
    reference
        The reference label map: adds its slices and a ``dice`` per slice.
    others
        Other models' masks of each structure on the same prompts.
    """

    def risk(label: int, mask: np.ndarray, extra: Sequence[int]) -> StructureRisk:
        s, other = structures[label], (others or {}).get(label, ())
        return structure_risk(
            label, mask, crop_slices(s), trace=s.trace, others=other, extra_slices=extra
        )

    bools = ((label, np.asarray(mask, bool)) for label, mask in masks.items())
    return _risks(bools, names, reference, model, condition, risk)


def dense_risk_rows(
    labels: np.ndarray,
    probabilities: np.ndarray,
    names: Mapping[int, str],
    *,
    model: str,
    condition: str = CLEAN,
    reference: np.ndarray | None = None,
    augmented: Sequence[np.ndarray] = (),
    risk_model: RiskModel | None = None,
) -> tuple[dict[int, StructureRisk], list[dict]]:
    """:func:`risk_rows` of a dense model's prediction.

    Parameters
    ----------
    labels
        The label map, ``(n, H, W)``.
    probabilities
        Its softmax probabilities, ``(K, n, H, W)``.
    names
        The structures to describe, by label (one without a class gets probability 0).
    model, condition, reference
        As :func:`risk_rows`.
    augmented
        Label maps of test-time augmented passes (the ``tta`` signal).
    risk_model
        Default: the shipped dense one (:attr:`RiskKind.DENSE`).
    """
    risk_model = risk_model or RiskModel.load(kind=RiskKind.DENSE)

    def risk(label: int, mask: np.ndarray, extra: Sequence[int]) -> StructureRisk:
        p = probabilities[label] if label < len(probabilities) else np.zeros(mask.shape)
        aug = [np.asarray(a) == label for a in augmented]
        return structure_risk(label, mask, p, extra_slices=extra, augmented=aug, model=risk_model)

    masks = ((label, np.asarray(labels) == label) for label in names)  # one at a time
    return _risks(masks, names, reference, model, condition, risk)


def _risks(
    masks: Iterable[tuple[int, np.ndarray]],
    names: Mapping[int, str],
    reference: np.ndarray | None,
    model: str,
    condition: str,
    risk: Any,
) -> tuple[dict[int, StructureRisk], list[dict]]:
    """``risk(label, mask, the reference's non-empty slices)`` of each ``(label, mask)``, and
    its ``slices.csv`` rows.
    """
    out: dict[int, StructureRisk] = {}
    rows: list[dict] = []
    for label, mask in masks:
        ref = None if reference is None else np.asarray(reference) == label
        extra = () if ref is None else np.flatnonzero(ref.reshape(len(ref), -1).any(1)).tolist()
        r = out[label] = risk(label, mask, extra)
        head = {"structure": names.get(label, str(label)), "label": int(r.label), "model": model}
        for sr in r.slices:
            row = {**head, "condition": condition, "slice": sr.slice, "risk": sr.risk}
            row.update(area=sr.area, **{sig.value: v for sig, v in sr.signals.items()})
            row["flags"] = FLAG_SEPARATOR.join(f.value for f in sr.flags)
            if ref is not None:
                row["dice"] = mask_dice(ref[sr.slice], mask[sr.slice])
            rows.append(row)
    return out, rows


@dataclass(frozen=True)
class FlaggedSlice:
    """A slice a person should look at, and why."""

    slice: int
    risk: float
    flags: tuple[Flag, ...]


@dataclass(frozen=True)
class WorkItem:
    """One structure of one prediction in a worklist (``dice`` NaN without a reference)."""

    case: str
    structure: str
    model: str
    condition: str
    risk: float
    dice: float
    flagged: tuple[FlaggedSlice, ...]

    @property
    def key(self) -> tuple[str, str, str, str]:
        """``(case, structure, model, condition)``: what :func:`row_key` gives its rows."""
        return (self.case, self.structure, self.model, self.condition)

    @property
    def first_slice(self) -> int | None:
        """The slice to open the case on: its riskiest flagged slice."""
        return self.flagged[0].slice if self.flagged else None

    def to_dict(self) -> dict:
        """Its JSON form (``segeval triage --json``)."""
        out = {k: getattr(self, k) for k in ("case", "structure", "model", "condition", "risk")}
        out["dice"] = None if math.isnan(self.dice) else self.dice
        why = [
            {"slice": f.slice, "risk": f.risk, "why": [x.value for x in f.flags]}
            for f in self.flagged
        ]
        return {**out, "flagged": why}


def _flags(text: str) -> tuple[Flag, ...]:
    known = {f.value: f for f in Flag}
    return tuple(known[t] for t in (text or "").split(FLAG_SEPARATOR) if t in known)


def worklist(folder: str | os.PathLike) -> list[WorkItem]:
    """A results folder's structures, riskiest first (ties: case, structure, model).

    Raises
    ------
    napari_segeval.ReadError
        No ``results.csv``, or no ``risk`` column (written before risks were).
    """
    from napari_segeval.metrics import ResultsTable

    def read(name: str) -> list[dict]:
        return list(ResultsTable.from_csv(out / name).rows) if (out / name).is_file() else []

    out = Path(folder)
    if not (out / "results.csv").is_file():
        raise ReadError(f"{out}: no results.csv (not a results folder, or the run has not ended)")
    rows = [r for r in read("results.csv") if r.get("status") == "ok"]
    if rows and not any("risk" in r for r in rows):
        raise ReadError(
            f"{out}: written before risks were estimated (results.csv has no risk column); "
            "re-run segeval evaluate to rank it"
        )
    return rank(rows, read("slices.csv"))


def rank(rows: Sequence[Mapping], slices: Sequence[Mapping] = ()) -> list[WorkItem]:
    """The structures of ``results.csv``'s ok ``rows`` with a risk, riskiest first, each with
    its flagged slices from ``slices.csv``'s rows.

    Examples
    --------
    >>> rows = [{"case": "a", "structure": "liver", "condition": "clean", "risk": 0.2},
    ...         {"case": "b", "structure": "liver", "condition": "clean", "risk": 0.9}]
    >>> slices = [{"case": "b", "structure": "liver", "condition": "clean", "slice": 4,
    ...            "risk": 0.7, "flags": "IoU estimate fell"}]
    >>> [(w.case, w.first_slice) for w in rank(rows, slices)]
    [('b', 4), ('a', None)]
    """
    flagged: dict[tuple, list[FlaggedSlice]] = {}
    for r in slices:
        flags = _flags(str(r.get("flags", "")))
        if flags:
            flagged.setdefault(row_key(r), []).append(
                FlaggedSlice(int(r["slice"]), as_float(r["risk"]), flags)
            )
    items = []
    for r in rows:
        risk = as_float(r.get("risk"))
        if math.isnan(risk):
            continue
        mine = tuple(sorted(flagged.get(row_key(r), ()), key=lambda f: (-f.risk, f.slice)))
        items.append(WorkItem(*row_key(r), risk, as_float(r.get("dice")), mine))
    return sorted(items, key=lambda w: (-w.risk, w.case, w.structure, w.model))


def row_key(r: Mapping) -> tuple[str, str, str, str]:
    """``(case, structure, model, condition)`` of a ``results.csv`` or ``slices.csv`` row
    (``""`` for no model): what ties a structure's row to its slices' rows.

    Examples
    --------
    >>> row_key({"case": "a", "structure": "liver", "condition": "clean", "model": None})
    ('a', 'liver', '', 'clean')
    """
    return (str(r["case"]), str(r["structure"]), str(r.get("model") or ""), str(r["condition"]))


def slice_risk(r: Mapping) -> SliceRisk:
    """One ``slices.csv`` row read back as a :class:`~napari_segeval.uncertainty.risk.SliceRisk`
    (a missing signal is NaN).

    Examples
    --------
    >>> s = slice_risk({"slice": "4", "risk": "0.7", "area": "12", "iou": "0.4",
    ...                 "flags": "IoU estimate fell"})
    >>> s.slice, s.risk, s.area, s.signals[Signal.IOU], s.flags
    (4, 0.7, 12, 0.4, (<Flag.IOU: 'IoU estimate fell'>,))
    """
    area = as_float(r.get("area"))
    return SliceRisk(
        int(r["slice"]),
        as_float(r.get("risk")),
        {sig: as_float(r.get(sig.value)) for sig in Signal},
        _flags(str(r.get("flags") or "")),
        int(area) if math.isfinite(area) else 0,
    )


def structure_risks(
    rows: Sequence[Mapping], slices: Sequence[Mapping] = ()
) -> dict[tuple[str, str, str, str], StructureRisk]:
    """The risks of result ``rows`` (with a ``risk`` and a ``label``) with their ``slices`` in
    slice order, by :func:`row_key`.

    ``slices.csv`` keeps only the :attr:`~napari_segeval.uncertainty.risk.Flag.STOPPED`
    flag, so the ``stops`` read back are the flagged slices that hold a mask.

    Examples
    --------
    >>> rows = [{"case": "a", "structure": "liver", "label": 1, "condition": "clean",
    ...          "risk": 0.4}]
    >>> slices = [{"case": "a", "structure": "liver", "condition": "clean", "slice": k,
    ...            "risk": r, "area": n, "flags": f} for k, r, n, f in
    ...           [(3, 0.2, 9, ""), (4, 0.6, 5, "the chain stopped here"),
    ...            (5, 0.5, 0, "the chain stopped here")]]
    >>> r = structure_risks(rows, slices)[("a", "liver", "", "clean")]
    >>> r.label, [s.slice for s in r.slices], r.stops, r.riskiest_slice
    (1, [3, 4, 5], ((4, 'the chain stopped here'),), 4)
    """
    mine: dict[tuple, list[SliceRisk]] = {}
    for r in slices:
        mine.setdefault(row_key(r), []).append(slice_risk(r))
    out = {}
    for r in rows:
        risk = as_float(r.get("risk"))
        if math.isnan(risk) or r.get("label") in (None, ""):
            continue
        found = tuple(sorted(mine.get(row_key(r), ()), key=lambda s: s.slice))
        stops = tuple(
            (s.slice, Flag.STOPPED.value) for s in found if Flag.STOPPED in s.flags and s.area > 0
        )
        out[row_key(r)] = StructureRisk(int(r["label"]), risk, found, stops)
    return out


__all__ = [
    "FLAG_SEPARATOR",
    "FlaggedSlice",
    "WorkItem",
    "crop_slices",
    "dense_risk_rows",
    "rank",
    "risk_rows",
    "row_key",
    "slice_risk",
    "structure_risks",
    "worklist",
]
