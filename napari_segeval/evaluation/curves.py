"""The ``interactive`` protocol's aggregation: Dice against correction rounds."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from napari_segeval._names import CLEAN
from napari_segeval.metrics.catalog import as_float, mean, percentiles, scored


def _quartiles(values: Iterable[float]) -> dict:
    a = scored(values)
    q1, med, q3 = map(float, percentiles(a, [25, 50, 75]))
    return {"n": int(a.size), "median": med, "q1": q1, "q3": q3, "mean": mean(a)}


def dice_curves(rows: Iterable[Mapping], rounds: int) -> dict[tuple, list[float]]:
    """``(condition, case, structure) -> [Dice after round 0, 1, ..., rounds]`` (NaN if missing)."""
    out: dict[tuple, list[float]] = {}
    for r in rows:
        k = int(r["round"])
        if 0 <= k <= rounds:
            key = (r["condition"], r["case"], r["structure"])
            out.setdefault(key, [math.nan] * (rounds + 1))[k] = as_float(r.get("dice"))
    return out


def curve_area(curve: Sequence[float]) -> float:
    """Area under Dice against round (trapezoid) over the number of rounds (0: round 0's Dice)."""
    a = np.asarray(curve, float)
    return float(a[0]) if a.size == 1 else float(((a[1:] + a[:-1]) / 2).sum() / (a.size - 1))


def rounds_to_reach(curve: Sequence[float], target: float = 0.9) -> int:
    """NoI: the first round whose Dice is at least ``target``; ``len(curve)`` when none is."""
    return next((k for k, d in enumerate(curve) if as_float(d) >= target), len(curve))


def interactive_curves(rows: Sequence[Mapping], rounds: int, target: float = 0.9) -> dict:
    """The ``interactive`` protocol's numbers per condition, over (case, structure) pairs.

    ``curve``: Dice quartiles after each round 0..K; ``auc``: :func:`curve_area`; ``noi``:
    :func:`rounds_to_reach` (capped at K + 1); ``reached``/``falls``: the fractions reaching
    ``target`` within K rounds / whose Dice ever falls (``falls_per_round``: per round);
    ``per_structure``: each structure's median curve.
    """
    curves = dice_curves(rows, rounds)
    conditions = sorted({c for c, _, _ in curves}, key=lambda c: (c != CLEAN, c))
    out: dict = {
        "rounds": rounds,
        "target_dice": target,
        "auc_rule": (
            "Area under Dice against round 0..K (trapezoid) divided by K; "
            "1 is Dice 1 from round 0; K = 0: round 0's Dice"
        ),
        "noi_rule": (
            f"NoI@{round(target * 100):g}: correction rounds until Dice >= "
            f"{target:g} (0 when round 0 reaches it), K + 1 = {rounds + 1} "
            "when K rounds do not"
        ),
        "conditions": {},
    }
    for cond in conditions:
        mine = {k[1:]: v for k, v in curves.items() if k[0] == cond}
        dice = np.asarray(list(mine.values()), float)  # (case x structure, round)
        of = np.asarray([s for _, s in mine])  # each row's structure
        noi = [rounds_to_reach(v, target) for v in mine.values()]
        out["conditions"][cond] = {
            "n_structures": len(mine),
            "curve": [{"round": k, **_quartiles(dice[:, k])} for k in range(rounds + 1)],
            "auc": _quartiles(curve_area(v) for v in mine.values()),
            "noi": dict(mean=float(np.mean(noi)), median=float(np.median(noi)), cap=rounds + 1),
            "reached": float(np.mean([n <= rounds for n in noi])),
            "falls": float(np.any(np.diff(dice, axis=1) < 0, axis=1).mean()),
            "falls_per_round": [float(f) for f in (dice[:, 1:] < dice[:, :-1]).mean(axis=0)],
            "per_structure": {
                s: [_quartiles(dice[of == s, k])["median"] for k in range(rounds + 1)]
                for s in sorted({s for _, s in mine})
            },
        }
    return out


def round_rows(rows: Sequence[Mapping], models: bool = False) -> list:
    """Round 0 and last-round rows of a run with correction rounds, for per-condition tables.

    Each row gets its prediction's ``key`` (with its model when ``models``) and, as
    ``condition``, the key's :meth:`~napari_segeval.evaluation.keys.PredictionKey.label`.
    """
    from napari_segeval.evaluation.keys import PredictionKey

    rows = list(rows)
    last = max((int(r["round"]) for r in rows), default=0)
    out = []
    for k in (0, last) if last else (0,):
        for r in rows:
            if int(r["round"]) == k:
                key = PredictionKey(r["condition"], k, r.get("model") if models else None)
                out.append({**r, "key": key, "condition": key.label()})
    return out


__all__ = ["curve_area", "dice_curves", "interactive_curves", "round_rows", "rounds_to_reach"]
