"""The promptable protocols' shared recipe: ``medsam2-3d``, ``medsam2-video`` and ``interactive``.

Read a case, choose each present structure's round-0 prompt, load the model and
preprocess (:func:`prepare_case`, :func:`with_model`), propagate and score
(:func:`score_result`); ``interactive``'s round 0 is ``medsam2-3d`` exactly. The options
that select MedSAM2's or the challenge's way are described in ``docs/protocols.md``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval._names import CLEAN, unnamed_label
from napari_segeval.evaluation.protocols import CaseOutput, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols._params import (
    Models,
    Params,
    choice,
    empty,
    number,
    tolerance,
)
from napari_segeval.evaluation.rows import PROMPTED
from napari_segeval.metrics.catalog import mean
from napari_segeval.metrics.structures import structures_to_score
from napari_segeval.models.precision import PRECISION_CHOICES


def _runs_box3d(ref: Any) -> bool:
    """Whether the model ``ref`` declares the challenge's 3D loop (``Capabilities.box3d``)."""
    from napari_segeval.models.registry import capabilities_of

    caps = capabilities_of(str(ref))
    return caps is not None and caps.box3d


@dataclass(frozen=True)
class _Head(Params):
    """The promptable protocols' first parameters."""

    model: str | None = "builtin"
    device: str | None = None
    window: Any = None
    jitter: int = number(0, "a whole number of pixels >= 0", lambda v: v >= 0, whole=True)
    seed: int = number(0, "a whole number", whole=True)


@dataclass(frozen=True)
class _Tolerance(_Head):
    """``tolerance_mm`` of NSD (``medsam2-video`` has none: no surface metrics)."""

    tolerance_mm: float = tolerance()


@dataclass(frozen=True)
class _Tail(_Head):
    """The promptable protocols' options and their checks."""

    empty: str = empty()
    keep_largest: bool = True
    channel: int = 0
    modality: str | None = None
    ct_mapping: str = choice("window", ("window", "minmax"))
    resize: str = choice("float", ("float", "pillow"))
    connectivity: int = choice(6, (6, 18, 26))
    decision: str = choice("probability", ("probability", "logit"))
    stop_when_empty: bool = True
    scoring: str = choice("merged", ("merged", "per-structure", "ordered"))
    jitter_mode: str = choice("edges", ("edges", "outward"))
    prompt: str = choice("box", ("box", "mask", "box3d"))
    nsd_min_dice: float | None = number(
        None, "null or a number in [0, 1]", lambda v: 0 <= v <= 1, null=True
    )
    prompts: str | None = None
    precision: str = choice("auto", PRECISION_CHOICES)

    def image_channel(self) -> int:
        """The ``channel`` parameter."""
        return self.channel

    def mask_prompts(self) -> bool:
        """Whether ``prompt`` is ``mask``."""
        return self.prompt == "mask"

    def propagation_options(self) -> dict[str, Any]:
        """``keep_largest``, ``stop_when_empty``, ``connectivity`` and ``decision``."""
        return {
            "keep_largest": self.keep_largest,
            "stop_when_empty": self.stop_when_empty,
            "connectivity": self.connectivity,
            "decision": self.decision,
        }

    def check(self) -> None:
        """The fields' rules, then: ``prompt=box3d`` needs a model with the challenge's loop,
        ``modality`` and ``window`` must be known, ``prompts`` a folder, and ``precision`` one
        that each model of the run and this machine can run.
        """
        from napari_segeval.io.case import MODALITIES

        super().check()
        if self.prompt == "box3d" and not _runs_box3d(self.model):
            raise SegEvalError(
                f"parameter prompt=box3d is the CVPR 2024 challenge's 3D loop of "
                f"LiteMedSAM: use --model litemedsam (got {self.model})"
            )
        modality = self.modality
        if modality is not None and str(modality).lower() not in {m.lower() for m in MODALITIES}:
            raise SegEvalError(
                f"parameter modality must be null or one of {', '.join(MODALITIES)}, "
                f"got {modality!r}"
            )
        if self.window is not None:
            from napari_segeval.inference.windowing import parse_window

            try:
                parse_window(self.window)
            except SegEvalError as exc:
                raise SegEvalError(f"parameter window: {exc}") from None
        if self.prompts is not None and not Path(str(self.prompts)).is_dir():
            raise SegEvalError(
                f"parameter prompts must be a folder of <case>.prompts.json files, "
                f"got {self.prompts!r}"
            )
        if self.precision != "auto":
            self.precisions()

    def precisions(self) -> dict[str, str]:
        """The precision each model of the run computes in on this machine
        (:func:`~napari_segeval.models.registry.precision_of`, which refuses one it cannot).
        """
        from napari_segeval.models.registry import precision_of

        refs: list = (self.models if isinstance(self, Models) else None) or [self.model]
        return {r: str(precision_of(r, self.precision, self.device)) for r in refs if r}


@dataclass(frozen=True)
class PromptParams(_Tail, _Tolerance):
    """The promptable protocols' parameters (``medsam2-3d``'s without ``models``)."""


@dataclass(frozen=True)
class Medsam2Params(Models, PromptParams):
    """``medsam2-3d``'s parameters: :class:`PromptParams` and ``models``."""


@dataclass(frozen=True)
class VideoParams(Models, _Tail):
    """``medsam2-video``'s parameters: :class:`PromptParams` less ``tolerance_mm`` (a clip has no
    surface metrics; its rows use the fixed tolerance), and ``models``.
    """

    tolerance_mm: ClassVar[float] = 2.0


#: What the promptable recipe reads: a record of one of the promptable protocols.
Promptable = PromptParams | VideoParams


def select(specs: list, params: Promptable) -> list:
    """The cases a promptable protocol runs: those with reference labels; with ``prompts``, every case."""
    if params.prompts is not None:
        return list(specs)
    return [s for s in specs if s.labels or s.error]


def case_rng(seed: int, case_id: str) -> np.random.Generator:
    """A generator seeded by the run seed and the case id (independent of order and workers)."""
    return np.random.default_rng([int(seed), zlib.crc32(case_id.encode())])


def reference_prompts(
    labels: np.ndarray,
    structures: dict[int, str],
    *,
    jitter: int,
    rng: np.random.Generator,
    first: bool = False,
    jitter_mode: str = "edges",
) -> list:
    """One box per structure present in ``labels`` on its key slice (the middle of its extent,
    or its first frame: :func:`~napari_segeval.prompts.from_labels.key_index`), jittered by
    ``jitter`` pixels (``jitter_mode``: :meth:`Box.jittered`).
    """
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.from_labels import key_index

    prompts = []
    ids = sorted(structures) if structures else [int(v) for v in np.unique(labels) if v]
    for label in ids:
        mask = labels == label
        if not mask.any():
            continue
        k = key_index(mask, "video" if first else "volume")
        box = Box.from_mask(mask[k], index=k, label=label)
        prompts.append(
            box.jittered(int(jitter), rng, mask.shape[1:], jitter_mode) if jitter else box
        )
    return prompts


def challenge_prompts(labels: np.ndarray, structures: dict[int, str]) -> list:
    """The CVPR 2024 challenge's prompt of every structure present: its 3D box as the 2D box on
    the middle slice of its z range, ``int((z_max - z_min) / 2 + z_min)``.
    """
    from napari_segeval.models.litemedsam import Box3D
    from napari_segeval.prompts.box import Box

    out = []
    ids = sorted(structures) if structures else [int(v) for v in np.unique(labels) if v]
    for label in ids:
        b = Box3D.from_mask(labels == label, label, 1)
        if b is not None:
            x0, y0, x1, y1 = b.xyxy
            out.append(Box(y0, x0, y1 + 1, x1 + 1, index=b.middle, label=label))
    return out


def prompt_sets(prompts: list, labels: np.ndarray, prompt: str) -> dict:
    """One prompt set per structure: its box, or (``prompt="mask"``) the reference mask of the
    box's frame.

    Examples
    --------
    >>> from napari_segeval.prompts.box import Box
    >>> lab = np.zeros((2, 4, 4), np.uint8); lab[1, 1:3, 1:3] = 2
    >>> sets = prompt_sets([Box(1, 1, 3, 3, index=1, label=2)], lab, "mask")
    >>> sets[2].prompts[0].area, sets[2].frames
    (4, (1,))
    """
    from napari_segeval.prompts.prompt_set import MaskPrompt, PromptSet

    if prompt == "mask":
        return {
            b.label: PromptSet(b.label, (MaskPrompt(labels[b.index] == b.label, b.index, b.label),))
            for b in prompts
        }
    return {b.label: PromptSet.from_box(b) for b in prompts}  # box3d: its middle-slice box


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
    """Read a case, pick its round-0 prompts, load and configure the model, preprocess.

    With ``prompts`` (a folder of prompts files) the case's prompts are its file's, and a
    case without reference labels runs too.
    """
    folder = params.prompts
    case = C.load_case(spec, channel=int(params.channel), need_labels=folder is None)
    if case.image.ndim - int(case.is_rgb) != 3:
        raise SegEvalError(
            f"case {spec.case_id}: {mode} protocol needs a 3D volume or "
            f"video, got axes {case.axes!r} shape {case.image.shape}"
        )
    if folder is not None:  # the person's prompts, with or without a reference
        return with_model(_from_file(spec, params, folder, case, mode), params)
    structures = structures_to_score(case.structures, case.labels)
    if params.prompt == "box3d":
        if mode != "volume":
            raise SegEvalError(
                "parameter prompt=box3d (the challenge's 3D boxes) is for volumes, not videos"
            )
        prompts = challenge_prompts(case.labels, structures)
    else:
        prompts = reference_prompts(
            case.labels,
            structures,
            jitter=params.jitter,
            rng=case_rng(params.seed, spec.case_id),
            first=(mode == "video"),
            jitter_mode=params.jitter_mode,
        )
    if not prompts:
        raise SegEvalError(f"case {spec.case_id}: reference labels are empty, nothing to prompt")
    present = {b.label: structures.get(b.label, unnamed_label(b.label)) for b in prompts}
    sets = prompt_sets(prompts, case.labels, params.prompt)
    return with_model(_unloaded(case, prompts, sets, present, params, mode), params)


def _from_file(spec, params: Promptable, folder: str, case: Any, mode: str) -> Prepared:
    """A case prompted by its ``<case>.prompts.json`` in ``folder`` (the ``prompts`` parameter),
    checked against the image; each set's round-0 box is its first box (else a unit box on its
    first frame).

    Raises
    ------
    napari_segeval.SegEvalError
        No prompts file for the case, or one that does not fit it (one line).
    """
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.prompt_file import read_prompts

    if params.prompt != "box":
        raise SegEvalError(
            f"case {spec.case_id}: prompt={params.prompt} needs reference labels; "
            "a prompts file gives the prompts as they are"
        )
    path = Path(folder) / f"{spec.case_id}.prompts.json"
    if not path.is_file():
        raise SegEvalError(
            f"case {spec.case_id}: no reference labels and no prompts file {path.name} in {folder}"
        )
    pf = read_prompts(path)
    where = "frame" if mode == "video" else "slice"
    pf.check(case.image.shape[:3], case.structures, where=where, source=str(path))
    sets = dict(pf.sets)
    names = {lab: pf.names.get(lab) or case.structures.get(lab) for lab in sets}
    present = {lab: name or unnamed_label(lab) for lab, name in names.items()}
    first = {
        lab: next((q for q in s.prompts if isinstance(q, Box)), None) for lab, s in sets.items()
    }
    boxes = [
        replace(first[lab] or Box(0, 0, 1, 1, index=s.frames[0]), label=lab)
        for lab, s in sets.items()
    ]
    return _unloaded(case, boxes, sets, present, params, mode)


def _unloaded(
    case: Any, boxes: list, sets: dict, present: dict, params: Promptable, mode: str
) -> Prepared:
    """A :class:`Prepared` before its model is loaded, with the propagation options the record
    selects.
    """
    from napari_segeval.propagation import PropagationOptions

    options = PropagationOptions(
        mode=mode,
        keep_largest=bool(params.keep_largest),
        stop_when_empty=bool(params.stop_when_empty),
        connectivity=params.connectivity,
        decision=params.decision,
    )
    modality = str(params.modality or case.modality or "other")
    return Prepared(case, boxes, sets, options, present, modality, params.ct_mapping)


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
    """The challenge's result map: the masks written in label order (a later one overwrites).

    Examples
    --------
    >>> a = np.array([[True, True, False]]); b = np.array([[False, True, True]])
    >>> ordered_labels({2: b, 1: a}, (1, 3)).tolist()
    [[1, 2, 2]]
    """
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
    rows = [  # no reference: nothing scored, the rows carry the risk
        row
        for pred, names in parts
        for row in C.score(
            case.labels,
            pred,
            case.spacing,
            names,
            condition,
            tolerance_mm=params.tolerance_mm,
            empty=params.empty,
            surface=not video,
        )
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


def propagate_and_score(spec, params: Promptable, *, mode: str) -> CaseOutput:
    """One model on one case (``mode``: ``volume`` or ``video``)."""
    prepared = prepare_case(spec, params, mode=mode)
    return case_output(spec, params, prepared, propagate(prepared, params), mode=mode)


def propagate(prepared: Prepared, params: Promptable) -> Any:
    """The model's result: the project's propagation, or (``prompt="box3d"``) the challenge's 3D loop."""
    from napari_segeval.propagation import propagate_case

    if params.prompt == "box3d":
        return challenge_result(prepared)
    return propagate_case(prepared.model, prepared.frames, prepared.sets, prepared.options)


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
    case = prepared.case
    k = prepared.boxes[0].index if mode == "video" or case.labels is None else None
    saved = scored_labels(res, params)
    return C.output(case, rows, {CLEAN: saved}, index=k, slices=slices)


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


def models_on_same_prompts(
    spec, params: Medsam2Params | VideoParams, models: list, *, mode: str
) -> dict:
    """Every model on one case, read and prompted once; each model's risk reads the others' masks."""
    each = {m: replace(params, model=m, models=None) for m in models}
    first = prepare_case(spec, each[models[0]], mode=mode)
    done: dict[str, tuple[Prepared, Any]] = {}
    for i, m in enumerate(models):
        prepared = first if i == 0 else with_model(first, each[m])
        res = propagate(prepared, each[m])
        done[m] = (replace(prepared, model=None, frames=None), res)  # free the model
    masks = {m: structure_masks(res, p, each[m]) for m, (p, res) in done.items()}
    return {
        m: case_output(
            spec,
            each[m],
            p,
            res,
            mode=mode,
            others={lab: [masks[o][lab] for o in models if o != m] for lab in p.present},
        )
        for m, (p, res) in done.items()
    }


def used(rows: list[dict], key: str) -> list:
    """The distinct values of ``key`` in ``rows`` (which modality, scoring ... was used)."""
    return sorted({str(r[key]) for r in rows if r.get(key) not in (None, "")})


def provenance(rows: list[dict]) -> dict:
    """A summary's ``modalities`` and ``scoring``: the values the rows used."""
    return {"modalities": used(rows, "modality"), "scoring": used(rows, "scoring")}


def protocol(mode: str, **kw: Any) -> Protocol:
    """A promptable protocol of ``mode`` (``volume`` or ``video``) on this recipe: one model on a
    case (``run_case``), or several on its same prompts (``run_models``).
    """
    run_case, run_models = (
        partial(f, mode=mode) for f in (propagate_and_score, models_on_same_prompts)
    )
    kw.update(rows=PROMPTED, model_kind="promptable", select=select)
    return Protocol(run_case=run_case, run_models=run_models, **kw)


__all__ = [
    "ChallengeResult",
    "Prepared",
    "case_output",
    "case_rng",
    "challenge_prompts",
    "Medsam2Params",
    "PromptParams",
    "Promptable",
    "VideoParams",
    "gate_nsd",
    "models_on_same_prompts",
    "ordered_labels",
    "prepare_case",
    "prompt_sets",
    "propagate",
    "propagate_and_score",
    "protocol",
    "provenance",
    "reference_prompts",
    "score_result",
    "scored_labels",
    "select",
    "structure_masks",
    "used",
    "with_model",
]
