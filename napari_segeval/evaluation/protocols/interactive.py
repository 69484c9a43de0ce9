"""``interactive``: Dice after each simulated correction round (``medsam2-3d``'s or
``medsam2-video``'s round 0, then :func:`napari_segeval.prompts.next_correction` per
structure, re-propagated), clean and under attack (``docs/protocols.md``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval._names import CLEAN
from napari_segeval.evaluation.keys import PredictionKey
from napari_segeval.evaluation.protocols import CaseOutput, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _promptable as P
from napari_segeval.evaluation.protocols._params import Models, choice, differences, listed, number
from napari_segeval.evaluation.rows import ROUNDS

#: Where the simulated person corrects: ``oracle`` the most wrong slice (reads the
#: reference), ``risk`` the first wrong one of :func:`review_order`, ``random`` shuffled.
SLICE_CHOICES = ("oracle", "risk", "random")


@dataclass(frozen=True)
class _Rounds(P.PromptParams):
    """The correction rounds' parameters, after medsam2-3d's."""

    mode: str = choice("volume", ("volume", "video"))
    rounds: int = number(5, "a whole number >= 0", lambda v: v >= 0, whole=True)
    refine_prompt: str = choice("auto", ("auto", "point", "box"))
    target_dice: float = number(0.9, "a number in (0, 1]", lambda v: 0 < v <= 1)
    attacks: list = listed()
    slice_choice: str = choice("oracle", SLICE_CHOICES)

    def per_frame(self) -> bool:
        """Whether ``mode`` is ``video``."""
        return self.mode == "video"


@dataclass(frozen=True)
class InteractiveParams(Models, _Rounds):
    """``interactive``'s parameters: medsam2-3d's, the rounds' and ``models``."""


#: Slices a simulated person without the reference looks at per structure and round
#: (``slice_choice`` ``risk`` or ``random``), in order, until one is wrong.
LOOKS_PER_ROUND = 3


def review_order(
    choice: str,
    structure: Any,
    mask: np.ndarray,
    skip: Iterable[int] = (),
    rng: np.random.Generator | None = None,
) -> list[int]:
    """The slices a person without the reference looks at, in order (``risk``: flagged first,
    riskiest first; ``random``: shuffled), among those the structure's risk describes, less ``skip``.
    """
    from napari_segeval.evaluation.triage import crop_slices
    from napari_segeval.uncertainty.risk import structure_risk

    risk = structure_risk(structure.label, mask, crop_slices(structure), trace=structure.trace)
    candidates = [s for s in risk.slices if s.slice not in set(skip)]
    if choice == "random":
        order = (rng or np.random.default_rng()).permutation(len(candidates))
        return [int(candidates[int(i)].slice) for i in order]
    return [int(s.slice) for s in sorted(candidates, key=lambda s: (not s.flags, -s.risk, s.slice))]


def refine_kind(model: Any, refine_prompt: str) -> str:
    """``"point"`` or ``"box"``: what the corrections are for this model."""
    takes = model.capabilities.points
    if refine_prompt == "auto":
        return "point" if takes else "box"
    if refine_prompt == "point" and not takes:
        raise SegEvalError(
            f"model {model.name} does not take points: use --param refine_prompt=box (or auto)"
        )
    return refine_prompt


def _base_params(params: InteractiveParams) -> InteractiveParams:
    """The record round 0 is scored with (videos: medsam2-video's fixed tolerance, no NSD)."""
    return replace(params, tolerance_mm=2.0) if params.mode == "video" else params


def correction_rounds(
    prepared: P.Prepared, frames: Any, params: InteractiveParams, kind: str
) -> Iterator[tuple[int, Any, dict]]:
    """``(round, result, added)`` of round 0 and each correction round; ``added``: structure id
    -> the :class:`~napari_segeval.prompts.Correction` added (None: exact, or no box left).
    """
    from napari_segeval.prompts.correction import next_correction
    from napari_segeval.prompts.prompt_set import Point
    from napari_segeval.propagation import PropagationSession

    session = PropagationSession(prepared.model, frames, prepared.options)
    session.set_prompts(prepared.sets)
    res = session.propagate()
    yield 0, res, {}
    labels = prepared.case.labels
    if labels is None:
        raise SegEvalError("the interactive protocol needs reference labels to draw corrections")
    points = prepared.model.capabilities.points
    choice = params.slice_choice
    rng = P.case_rng(params.seed, str(prepared.case.image_path or ""))
    reviewed: dict[int, set[int]] = {}  # slices a person looked at and found right
    for r in range(1, params.rounds + 1):
        masks = P.structure_masks(res, prepared, params)
        added = {}
        for lab in prepared.present:
            # a box replaces what its slice had: never over a box or a mask prompt
            boxed = [q.index for q in session.prompts[lab] if not isinstance(q, Point)]
            looks: list[int | None] = [None]  # the oracle: the most wrong slice
            if choice != "oracle":  # where a person without the reference looks
                skip = reviewed.setdefault(lab, set()) | {q.index for q in session.prompts[lab]}
                looks = list(review_order(choice, res.structures[lab], masks[lab], skip, rng))
                looks = looks[:LOOKS_PER_ROUND]
                reviewed[lab].update(int(k) for k in looks if k is not None)
            c = None
            for index in looks:
                c = next_correction(
                    labels == lab,
                    masks[lab],
                    label=lab,
                    kind=kind,
                    boxed=boxed,
                    points=points,
                    index=index,
                )
                if c is not None:
                    break
            added[lab] = c
            if c is not None:
                session.add(c.prompt)
        if session.stale():
            res = session.propagate()
        yield r, res, added


def _prompt_columns(prompts: Sequence, where: str) -> dict:
    """The ``prompt`` (JSON) and ``prompt_text`` columns of the prompts added in a round."""
    from napari_segeval.prompts.prompt_file import prompt_to_dict
    from napari_segeval.prompts.prompt_set import describe

    return {
        "prompt": json.dumps([prompt_to_dict(p) for p in prompts], separators=(",", ":")),
        "prompt_text": "; ".join(describe(p, where) for p in prompts),
    }


def _attacked_frames(prepared: P.Prepared, attack: Mapping, params: InteractiveParams, mode: str):
    """Craft ``attack`` against the round-0 prompts: ``(condition, frames, row values, images)``."""
    import torch

    from napari_segeval.attacks import PromptTarget, attack_case
    from napari_segeval.attacks import condition_name as attack_condition
    from napari_segeval.evaluation.protocols import _dense as D

    if ":" in str(attack.get("name", "")):
        raise SegEvalError(
            f"attack {dict(attack)}: the interactive protocol runs the attacks "
            "of napari_segeval.attacks only (a user attack returns labels, "
            "not an image to correct on)"
        )
    if prepared.ct_mapping != "window":
        raise SegEvalError(
            "attacks need ct_mapping=window (the attack target preprocesses "
            "with the window mapping)"
        )
    config = D.attack_config(attack)
    target_opts = {k: attack[k] for k in D.TARGET_KEYS if k in attack}
    case = replace(prepared.case, modality=prepared.modality)
    target = PromptTarget(
        prepared.model,
        case,
        prepared.sets,
        mode=mode,
        window=params.window,
        keep_largest=prepared.options.keep_largest,
        stop_when_empty=prepared.options.stop_when_empty,
    )
    res = attack_case(
        target,
        config,
        clamp=bool(target_opts.get("clamp", True)),
        reference=str(target_opts.get("reference", "labels")),
    )
    delta = torch.as_tensor(res.perturbation_normalized, device=target.x.device)
    clean = prepared.frames
    frames = (target.x[0] + delta).to(device=clean.device, dtype=clean.dtype)
    cond = attack_condition(res.params["attack"])
    values = {"eps": float(config.eps), "eps_raw": float(res.budget.eps_raw)}
    return cond, frames, values, D.attack_images(cond, res.perturbed_image, res.perturbation)


def run_case(spec, params: InteractiveParams) -> CaseOutput:
    """Round 0 and ``rounds`` correction rounds per condition."""
    return _rounds_of(spec, params, P.prepare_case(spec, _base_params(params), mode=params.mode))


def run_models(spec, params: InteractiveParams, models: list) -> dict:
    """Several models on one case: the same round-0 prompts, then each model's own rounds."""
    each = P.each_model(spec, params, models, params.mode, _base_params)
    return {m: _rounds_of(spec, p, prepared) for m, p, prepared in each}


def _rounds_of(spec, params: InteractiveParams, prepared: P.Prepared) -> CaseOutput:
    """Every condition's rounds of one model on one prepared case."""
    mode = params.mode
    base = _base_params(params)
    kind = refine_kind(prepared.model, params.refine_prompt)
    where = "frame" if mode == "video" else "slice"
    conditions: list[tuple] = [(CLEAN, prepared.frames, {"eps": 0.0, "eps_raw": 0.0}, {})]
    conditions += [_attacked_frames(prepared, a, params, mode) for a in params.attacks]
    rows, predictions, images, views = [], {}, {}, {}
    last = params.rounds
    for cond, frames, values, extra in conditions:
        images.update(extra)
        for r, res, added in correction_rounds(prepared, frames, params, kind):
            scored = P.score_result(res, prepared, base, spec, mode=mode, condition=cond)
            for row in scored:
                lab, c = row["label"], added.get(row["label"])
                prompts = list(prepared.sets[lab].prompts) if r == 0 else [c.prompt] if c else []
                row.update(round=r, refine_prompt=kind, **values, **_prompt_columns(prompts, where))
            rows += scored
            predictions[str(PredictionKey(cond, r))] = res.labels
            if r in (0, last):  # thumbnails: named as the report's tables name them
                views[PredictionKey(cond, r).label()] = res.labels
    k = prepared.boxes[0].index if mode == "video" else None
    case = prepared.case
    return C.output(case, rows, predictions, images, shown=views, index=k)


def prompt_sets_at(
    rows: Sequence[Mapping],
    case: str,
    condition: str = CLEAN,
    round: int | None = None,
    model: str | None = None,
) -> dict:
    """The prompt sets of a case after round ``round`` (default: the last), from its rows
    (``model``: whose rounds, in a run of several models).
    """
    from napari_segeval.evaluation.curves import case_rounds
    from napari_segeval.prompts.prompt_set import PromptSet

    last = float("inf") if round is None else int(round)
    mine = [r for r in rows if r["case"] == case and r["condition"] == condition]
    sets = {}
    for lab in sorted({int(r["label"]) for r in mine if r.get("label") is not None}):
        done = [x for x in case_rounds(rows, case, lab, condition, model) if x.round <= last]
        if done:
            sets[lab] = PromptSet(lab, done[-1].prompts)
    return sets


def summarize(rows: list[dict], params: InteractiveParams) -> dict:
    """Dice per round (median, IQR), AUC, NoI@target and the share reaching it, per condition."""
    from napari_segeval.evaluation.curves import interactive_curves

    return {
        **P.provenance(rows),
        "refine_prompt": P.used(rows, "refine_prompt"),
        **interactive_curves(rows, params.rounds, params.target_dice),
    }


#: Deliberate differences of the defaults from the published iterative-prompting evaluations.
DIFFERENCES = differences("interactive")


PROTOCOL = Protocol(
    rows=ROUNDS,
    name="interactive",
    version="1.2",
    params=InteractiveParams,
    differences=DIFFERENCES,
    run_case=run_case,
    model_kind="promptable",
    run_models=run_models,
    summarize=summarize,
    has_rounds=True,
    description=(
        "Interactive correction: medsam2-3d's (or medsam2-video's) round 0, then K rounds "
        "that each add a click (or box) where the prediction is most wrong and "
        "re-propagate; Dice and NSD per round, Dice-vs-round curve (median, IQR), its "
        "area, rounds to reach Dice 0.9 (NoI@90), clean and under attack."
    ),
)

__all__ = [
    "DIFFERENCES",
    "PROTOCOL",
    "InteractiveParams",
    "correction_rounds",
    "prompt_sets_at",
    "refine_kind",
    "run_case",
    "run_models",
    "summarize",
]
