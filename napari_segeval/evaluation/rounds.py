"""The correction rounds of one structure of an ``interactive`` run's case, for browsing."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from napari_segeval._names import CLEAN
from napari_segeval.evaluation.keys import PredictionKey
from napari_segeval.metrics.catalog import as_float


def round_key(condition: str, round: int, model: str | None = None) -> str:
    """The saved prediction of ``condition`` after ``round`` (of ``model`` in a run of several)."""
    return str(PredictionKey(condition, int(round), model))


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


__all__ = ["Round", "case_rounds", "round_key"]
