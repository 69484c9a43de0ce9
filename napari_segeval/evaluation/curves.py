"""The ``interactive`` protocol's aggregation: Dice against correction rounds.

Every function takes the ok rows of a run (``case``, ``structure``, ``condition``,
``round``, ``dice``) and returns plain JSON-able values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from napari_segeval._names import CLEAN
from napari_segeval.metrics.catalog import as_float, mean, percentiles, scored


def _quartiles(values: Iterable[float]) -> dict:
    a = scored(values)
    q1, med, q3 = percentiles(a, [25, 50, 75])
    return {
        "n": int(a.size),
        "median": float(med),
        "q1": float(q1),
        "q3": float(q3),
        "mean": mean(a),
    }


def dice_curves(rows: Iterable[Mapping], rounds: int) -> dict[tuple, list[float]]:
    """``(condition, case, structure) -> [Dice after round 0, 1, ..., rounds]`` (NaN if missing).

    Examples
    --------
    >>> rows = [{"case": "a", "structure": "s", "condition": "clean", "round": r, "dice": d}
    ...         for r, d in ((0, 0.5), (1, 0.7))]
    >>> dice_curves(rows, 1)
    {('clean', 'a', 's'): [0.5, 0.7]}
    """
    out: dict[tuple, list[float]] = {}
    for r in rows:
        k = int(r["round"])
        if 0 <= k <= rounds:
            curve = out.setdefault(
                (r["condition"], r["case"], r["structure"]), [math.nan] * (rounds + 1)
            )
            curve[k] = as_float(r.get("dice"))
    return out


def curve_area(curve: Sequence[float]) -> float:
    """Area under Dice against round (trapezoid) divided by the number of rounds.

    1.0 means Dice 1 from round 0 on; with no correction round it is round 0's Dice.

    Examples
    --------
    >>> curve_area([0.5, 1.0, 1.0]), curve_area([0.7])
    (0.875, 0.7)
    """
    a = np.asarray(curve, float)
    if a.size == 1:
        return float(a[0])
    return float(((a[1:] + a[:-1]) / 2).sum() / (a.size - 1))


def rounds_to_reach(curve: Sequence[float], target: float = 0.9) -> int:
    """NoI: the first round whose Dice is at least ``target`` (0: round 0 already is);
    ``len(curve)`` (K + 1, the cap) when no round reaches it.

    Examples
    --------
    >>> rounds_to_reach([0.5, 0.92, 0.95]), rounds_to_reach([0.95]), rounds_to_reach([0.5, 0.6])
    (1, 0, 2)
    """
    for k, d in enumerate(curve):
        if as_float(d) >= target:
            return k
    return len(curve)


def interactive_curves(rows: Sequence[Mapping], rounds: int, target: float = 0.9) -> dict:
    """The ``interactive`` protocol's numbers per condition, over (case, structure) pairs.

    ``curve``: Dice after each round 0..K (n, median, q1, q3, mean); ``auc``:
    :func:`curve_area` (median, quartiles, mean); ``noi``: :func:`rounds_to_reach`
    (mean, median; capped at K + 1); ``reached``: the fraction that reaches ``target``
    within K rounds; ``falls``: the fraction whose Dice falls from some round to the
    next; ``falls_per_round``: for each round 1..K, the fraction whose Dice is lower
    than after the round before; ``per_structure``: the median curve of each structure.

    Examples
    --------
    >>> rows = [{"case": c, "structure": "s", "condition": "clean", "round": r, "dice": d}
    ...         for c, ds in (("a", (0.5, 0.95)), ("b", (0.8, 0.7))) for r, d in enumerate(ds)]
    >>> s = interactive_curves(rows, 1)["conditions"]["clean"]
    >>> [p["median"] for p in s["curve"]], s["noi"]["mean"], s["reached"], s["falls"]
    ([0.65, 0.825], 1.5, 0.5, 0.5)
    >>> s["falls_per_round"]
    [0.5]
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
        noi = [rounds_to_reach(v, target) for v in mine.values()]
        names = sorted({s for _, s in mine})
        out["conditions"][cond] = {
            "n_structures": len(mine),
            "curve": [
                {"round": k, **_quartiles(v[k] for v in mine.values())} for k in range(rounds + 1)
            ],
            "auc": _quartiles(curve_area(v) for v in mine.values()),
            "noi": {
                "mean": float(np.mean(noi)),
                "median": float(np.median(noi)),
                "cap": rounds + 1,
            },
            "reached": float(np.mean([n <= rounds for n in noi])),
            "falls": float(
                np.mean([bool(np.any(np.diff(np.asarray(v, float)) < 0)) for v in mine.values()])
            ),
            "falls_per_round": [
                float(np.mean([v[k + 1] < v[k] for v in mine.values()])) for k in range(rounds)
            ],
            "per_structure": {
                s: [
                    _quartiles(v[k] for (_, name), v in mine.items() if name == s)["median"]
                    for k in range(rounds + 1)
                ]
                for s in names
            },
        }
    return out


def round_rows(rows: Sequence[Mapping], models: bool = False) -> list:
    """Rows of a run with correction rounds (its protocol's ``has_rounds``) for
    per-condition tables: round 0 and the last round K (other rounds dropped).

    Each row gets its prediction's ``key``
    (:class:`~napari_segeval.evaluation.keys.PredictionKey`: its condition, its round
    K or none for round 0 and, with ``models``, its model) and, as ``condition``, how
    tables name it (:meth:`~napari_segeval.evaluation.keys.PredictionKey.label`:
    ``"<condition> round K"``, ``"<condition> @ <model> round K"``).

    Examples
    --------
    >>> rows = [{"condition": "clean", "round": r} for r in (0, 1, 2)]
    >>> [r["condition"] for r in round_rows(rows)]
    ['clean', 'clean round 2']
    >>> [str(r["key"]) for r in round_rows([{**r, "model": "m"} for r in rows], models=True)]
    ['clean @ m', 'round2:clean @ m']
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
