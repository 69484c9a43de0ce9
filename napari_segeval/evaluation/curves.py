"""The ``interactive`` protocol's correction rounds: their aggregation (Dice against round)
and, for browsing, the rounds of one structure of a case."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from napari_segeval._names import CLEAN
from napari_segeval.evaluation.keys import PredictionKey
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
    """The rows of each prediction in the report's tables: round 0 and the last round (rows
    without a round are round 0). Each gets its prediction's ``key`` (with its model when
    ``models``) and, as ``condition``, the key's
    :meth:`~napari_segeval.evaluation.keys.PredictionKey.label`.
    """
    rows = list(rows)
    last = max((int(r.get("round") or 0) for r in rows), default=0)
    out = []
    for k in (0, last) if last else (0,):
        for r in rows:
            if int(r.get("round") or 0) == k:
                key = PredictionKey(r["condition"], k, r.get("model") if models else None)
                out.append({**r, "key": key, "condition": key.label()})
    return out


@dataclass(frozen=True)
class Round:
    """One round of one structure: what was added and what it scored."""

    round: int  #: 0 (the first propagation) to K
    key: PredictionKey  #: the saved prediction of this round
    dice: float  #: the structure's Dice after this round (NaN when not scored)
    added: tuple  #: the prompts added in this round (round 0: the first prompt set)
    prompts: tuple  #: every prompt of the structure after this round, in the order given
    where: str = "slice"  #: what a prompt's index names ("frame" in a mode=video run)

    @property
    def change(self) -> str:
        """The added prompts for people (``"+ point (y=3, x=4) on slice 7"``), or ``"none"``."""
        from napari_segeval.prompts.prompt_set import describe

        return "; ".join(describe(p, self.where) for p in self.added) or "none"


def case_rounds(
    rows: Sequence[Mapping],
    case: str,
    label: int,
    condition: str = CLEAN,
    model: str | None = None,
    where: str = "slice",
) -> list[Round]:
    """The rounds of structure ``label`` of ``case`` under ``condition``, round 0 first.

    ``rows`` are a run's result rows; ``model`` picks one model's rounds in a run of
    several; ``where`` is ``"frame"`` for a ``mode=video`` run.
    """
    from napari_segeval.prompts.prompt_file import prompt_from_dict

    def mine(r: Mapping) -> bool:
        if (r.get("case"), r.get("condition")) != (case, condition) or r.get("label") is None:
            return False
        ok = r.get("round") not in (None, "") and model in (None, r.get("model"))
        return ok and int(r["label"]) == int(label)

    out: list[Round] = []
    given: tuple = ()
    for r in sorted(filter(mine, rows), key=lambda r: int(r["round"])):
        k = int(r["round"])
        added = tuple(prompt_from_dict(d, int(label)) for d in json.loads(r.get("prompt") or "[]"))
        given += added
        key = PredictionKey(condition, k, model)
        out.append(Round(k, key, as_float(r.get("dice")), added, given, where))
    return out


__all__ = [
    "Round",
    "case_rounds",
    "curve_area",
    "dice_curves",
    "interactive_curves",
    "round_rows",
    "rounds_to_reach",
]
