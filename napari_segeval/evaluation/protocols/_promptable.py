"""The promptable protocols' shared recipe (``medsam2-3d``, ``medsam2-video``,
``interactive``): prompt, preprocess, propagate, score; options in ``docs/protocols.md``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval._names import CLEAN
from napari_segeval.evaluation.protocols import CaseOutput, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols._prompt_params import (
    Medsam2Params,
    Promptable,
    VideoParams,
)

# `name as name`: re-exported, where interactive, tests and benchmarks import them
from napari_segeval.evaluation.protocols._prompt_params import PromptParams as PromptParams
from napari_segeval.evaluation.protocols._prompts import case_rng as case_rng
from napari_segeval.evaluation.protocols._prompts import challenge_prompts as challenge_prompts
from napari_segeval.evaluation.protocols._prompts import prompt_sets as prompt_sets
from napari_segeval.evaluation.protocols._prompts import reference_prompts as reference_prompts
from napari_segeval.evaluation.protocols._prompts import round0
from napari_segeval.evaluation.rows import PROMPTED
from napari_segeval.metrics.catalog import mean


def select(specs: list, params: Promptable) -> list:
    """The cases a promptable protocol runs: those with reference labels; with ``prompts``, every case."""
    if params.prompts is not None:
        return list(specs)
    return [s for s in specs if s.labels or s.error]


@dataclass
class Prepared:
    """One case ready to propagate (:func:`prepare_case`): round-0 ``boxes`` and their ``sets``,
    ``present`` ids to names, and the ``frames`` preprocessed by ``model``. All but ``model``,
    ``frames`` and ``resize`` are the same for every model (:func:`with_model`).
    """

    case: Any
    boxes: list
    sets: dict
    options: Any
    present: dict
    modality: str
    ct_mapping: str
    model: Any = None
    frames: Any = None
    resize: str = "float"


def prepare_case(spec, params: Promptable, *, mode: str) -> Prepared:
    """Read a case, pick its round-0 prompts, load and configure the model, preprocess."""
    from napari_segeval.propagation import PropagationOptions

    case = C.load_case(spec, channel=int(params.channel), need_labels=params.prompts is None)
    if case.image.ndim - int(case.is_rgb) != 3:
        raise SegEvalError(
            f"case {spec.case_id}: {mode} protocol needs a 3D volume or "
            f"video, got axes {case.axes!r} shape {case.image.shape}"
        )
    boxes, sets, present = round0(spec, case, params, mode)
    options = PropagationOptions(mode=mode, **params.propagation_options())
    modality = str(params.modality or case.modality or "other")
    prepared = Prepared(case, boxes, sets, options, present, modality, params.ct_mapping)
    return with_model(prepared, params)


def with_model(prepared: Prepared, params: Promptable) -> Prepared:
    """The same case and prompts for ``params.model``: loaded, configured, the case preprocessed."""
    model = C.promptable_model(str(params.model), params.device, params.precision)
    resize = "float"
    if model.capabilities.resize_modes:  # MedSAM2: float or Pillow resize
        resize = params.resize
        model = model.with_options(resize=resize)
    ct_mapping = prepared.ct_mapping
    extra = {} if ct_mapping == "window" else {"ct_mapping": ct_mapping}
    frames = model.preprocess(prepared.case.image, prepared.modality, params.window, **extra)
    return replace(prepared, model=model, frames=frames, resize=resize)


def ordered_labels(masks: dict, shape: tuple) -> np.ndarray:
    """The challenge's result map: the masks written in label order (a later one overwrites)."""
    out = np.zeros(shape, np.uint16)
    for lab in sorted(masks):
        out[np.asarray(masks[lab], bool)] = lab
    return out


def scored_labels(res, params: Promptable) -> np.ndarray:
    """The label map a result is scored and saved as: the merged one, or in label order (``ordered``)."""
    if params.scoring == "ordered":
        return ordered_labels(res.masks, res.labels.shape).astype(res.labels.dtype)
    return res.labels


def structure_masks(res, prepared: Prepared, params: Promptable) -> dict:
    """Each prompted structure's scored mask: its own (``per-structure``) or of the scored map."""
    if params.scoring == "per-structure":
        return {lab: np.asarray(res.masks[lab]) for lab in prepared.present}
    labels = scored_labels(res, params)
    return {lab: labels == lab for lab in prepared.present}


def gate_nsd(rows: list[dict], min_dice: float | None) -> list[dict]:
    """The challenge's NSD rule: a case's NSD counts only where its mean DSC is above
    ``min_dice``, else every NSD of the case is 0 (``nsd_gated``); ``None`` gates nothing.
    """
    if min_dice is None:
        return rows
    gated = mean(r.get("dice") for r in rows) <= float(min_dice)  # False with no Dice
    for r in rows:
        r["nsd_gated"] = gated
        if gated and r.get("nsd") is not None:
            r["nsd"] = 0.0
    return rows


def score_result(
    res, prepared: Prepared, params: Promptable, spec, *, mode: str, condition: str = CLEAN
) -> list[dict]:
    """The rows of one propagation result (Dice, NSD ... per structure)."""
    case, present = prepared.case, prepared.present
    video = mode == "video"
    if params.scoring == "per-structure":  # each structure's own, unmerged mask
        parts: Any = (
            (res.masks[lab].astype(np.uint16) * np.uint16(lab), {lab: name})
            for lab, name in present.items()
        )
    else:
        parts = [(scored_labels(res, params), present)]
    kw = {"tolerance_mm": params.tolerance_mm, "empty": params.empty, "surface": not video}
    # no reference: nothing scored, the rows carry the risk
    rows = [
        row for pred, names in parts for row in C.score_case(case, pred, names, condition, **kw)
    ]
    if not video and case.labels is not None:
        rows = gate_nsd(rows, params.nsd_min_dice)
    boxes = {b.label: b for b in prepared.boxes}
    task = Path(spec.root).name if spec.root else ""
    modality = prepared.modality
    for r in rows:
        b = boxes[r["label"]]
        r.update(
            task=task,
            key_slice=b.index,
            box=f"{b.y0},{b.x0},{b.y1},{b.x1}",
            model=str(params.model),
            network=res.params["model"],
            modality=modality,
            ct_mapping=prepared.ct_mapping if modality.upper() == "CT" else None,
            resize=prepared.resize,
            scoring=params.scoring,
        )
    return rows


def propagate_and_score(spec, params: Medsam2Params | VideoParams, *, mode: str) -> CaseOutput:
    """One model on one case (``mode``: ``volume`` or ``video``)."""
    return models_on_same_prompts(spec, params, [params.model], mode=mode)[params.model]


def case_output(
    spec,
    params: Promptable,
    prepared: Prepared,
    res: Any,
    *,
    mode: str,
    others: dict[int, list] | None = None,
) -> CaseOutput:
    """A propagation's rows (scores and ``risk``), ``slices.csv`` rows, thumbnails and prediction
    file; ``others``: other models' masks of each structure (the ``models`` risk signal).
    """
    from napari_segeval.evaluation.triage import risk_rows

    rows = score_result(res, prepared, params, spec, mode=mode)
    slices: list[dict] = []
    if not isinstance(res, ChallengeResult):
        risks, slices = risk_rows(
            res.structures,
            structure_masks(res, prepared, params),
            prepared.present,
            model=str(params.model),
            reference=prepared.case.labels,
            others=others,
        )
        for r in rows:
            r["risk"] = risks[r["label"]].risk
    k = prepared.boxes[0].index if mode == "video" or prepared.case.labels is None else None
    return C.output(
        prepared.case, rows, {CLEAN: scored_labels(res, params)}, index=k, slices=slices
    )


@dataclass
class ChallengeResult:
    """What the challenge's 3D loop gives: each structure's mask, their label map, provenance."""

    labels: np.ndarray
    masks: dict
    params: dict


def challenge_result(prepared: Prepared) -> ChallengeResult:
    """The CVPR 2024 challenge's 3D loop (LiteMedSAM's ``challenge_3d``) on a prepared case."""
    from napari_segeval.models.litemedsam import Box3D

    model = prepared.model
    if not model.capabilities.box3d:
        raise SegEvalError(
            "parameter prompt=box3d is LiteMedSAM's challenge loop: use --model litemedsam"
        )
    labels = prepared.case.labels
    boxes = [
        Box3D.from_mask(labels == b.label, b.label, v)
        for v, b in enumerate(sorted(prepared.boxes, key=lambda b: b.label), start=1)
    ]
    masks = model.challenge_3d(prepared.frames, boxes)
    return ChallengeResult(
        ordered_labels(masks, labels.shape).astype(np.uint16),
        masks,
        {"model": model.name, "loop": "cvpr24-3d"},
    )


def each_model(
    spec, params: Any, models: list, mode: str, base: Callable = lambda p: p
) -> Iterator:
    """``(model, its record, Prepared)`` of each of ``models`` on one case, read and prompted
    once (by the first); ``base(record)`` is the record the case is prepared with.
    """
    each = [replace(params, model=m, models=None) for m in models]
    first = prepare_case(spec, base(each[0]), mode=mode)
    for i, (m, p) in enumerate(zip(models, each, strict=True)):
        yield m, p, first if i == 0 else with_model(first, base(p))


def models_on_same_prompts(
    spec, params: Medsam2Params | VideoParams, models: list, *, mode: str
) -> dict:
    """Every model on one case, prompted once; each model's risk reads the others' masks."""
    from napari_segeval.propagation import propagate_case

    done = {}
    for m, p, prepared in each_model(spec, params, models, mode):
        # the project's propagation, or (prompt="box3d") the challenge's 3D loop
        res = (
            challenge_result(prepared)
            if p.prompt == "box3d"
            else propagate_case(prepared.model, prepared.frames, prepared.sets, prepared.options)
        )
        done[m] = (p, replace(prepared, model=None, frames=None), res)  # free the model
    several = len(done) > 1  # one model: no other models' masks to make
    masks = (
        {m: structure_masks(res, prep, p) for m, (p, prep, res) in done.items()} if several else {}
    )
    return {
        m: case_output(
            spec,
            p,
            prep,
            res,
            mode=mode,
            others={lab: [masks[o][lab] for o in models if o != m] for lab in prep.present}
            if several
            else None,
        )
        for m, (p, prep, res) in done.items()
    }


def used(rows: list[dict], key: str) -> list:
    """The distinct values of ``key`` in ``rows`` (which modality, scoring ... was used)."""
    return sorted({str(r[key]) for r in rows if r.get(key) not in (None, "")})


def provenance(rows: list[dict]) -> dict:
    """A summary's ``modalities`` and ``scoring``: the values the rows used."""
    return {"modalities": used(rows, "modality"), "scoring": used(rows, "scoring")}


def protocol(mode: str, **kw: Any) -> Protocol:
    """A promptable protocol of ``mode`` (``volume`` or ``video``) on this recipe."""
    run_case, run_models = (
        partial(f, mode=mode) for f in (propagate_and_score, models_on_same_prompts)
    )
    kw.update(rows=PROMPTED, model_kind="promptable", select=select)
    return Protocol(run_case=run_case, run_models=run_models, **kw)
