"""``msd-robust``: dense model, clean and under attacks; Dice, Dice drop, robust fraction
(Daza et al. 2021, corrected; ``docs/protocols.md``; the ``rog`` preset: :mod:`._msd_rog`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval._names import CLEAN
from napari_segeval.evaluation.protocols import CaseOutput, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _dense as D
from napari_segeval.evaluation.protocols._msd_rog import ROG, ROG_ATTACKS, ROG_EPS
from napari_segeval.evaluation.protocols._params import (
    Models,
    Params,
    choice,
    differences,
    empty,
    listed,
    number,
    tolerance,
)
from napari_segeval.evaluation.rows import ATTACKED

if TYPE_CHECKING:
    from napari_segeval.inference.postprocess import LesionMode

LESION_MODES = (None, "remove", "merge")


@dataclass(frozen=True)
class _Dense(Params):
    """``msd-robust``'s parameters before ``models``."""

    model: str | None = "builtin-ct"
    device: str | None = None
    overlap: float = number(0.5, "in [0, 1)", lambda v: 0 <= v < 1)
    mirror: bool = False
    postprocess: bool = True
    attacks: list = listed()
    robust_factor: float = 0.5
    empty: str = empty()
    surface: bool = False
    tolerance_mm: float = tolerance()
    channel: int | None = None
    mr_minmax: bool | None = None
    lesion_mode: LesionMode | None = choice(None, LESION_MODES)
    gate: bool = False
    risk: bool = True
    risk_tta: int = number(
        4, "0 (no tta signal) or a whole number >= 2", lambda v: v == 0 or v >= 2, whole=True
    )


@dataclass(frozen=True)
class MsdParams(Models, _Dense):
    """``msd-robust``'s parameters; ``attacks`` are checked by :func:`~._dense.check_attacks`."""

    def check(self) -> None:
        """The fields' rules and the attacks."""
        super().check()
        D.check_attacks(self.attacks)


def configure(model, params: MsdParams):
    """The model with the protocol's ``mr_minmax`` / ``lesion_mode`` (a copy; None keeps its
    plans); a model whose plans contradict ``mr_minmax`` refuses it.
    """
    from napari_segeval.models.dense import DenseModel

    minmax, mode = params.mr_minmax, params.lesion_mode
    if minmax is None and mode is None:
        return model
    if not isinstance(model, DenseModel):
        raise SegEvalError(
            f"mr_minmax and lesion_mode apply to dense models with plans; "
            f"{params.model} does its own processing (set them to null)"
        )
    changes: dict = {}
    if minmax is not None:
        if model.mr_minmax is not None and bool(model.mr_minmax) != bool(minmax):
            raise SegEvalError(
                f"{model.name}: its plans say mr_minmax={model.mr_minmax} (its intensity "
                f"statistics are {'in' if model.mr_minmax else 'not in'} min-max units); "
                f"mr_minmax={minmax} would normalize its inputs wrongly"
            )
        changes["mr_minmax"] = bool(minmax)
    if mode is not None:
        changes["postprocessing"] = replace(model.postprocessing, lesion_mode=mode)
    return replace(model, **changes)


def _model(params: MsdParams):
    """The configured dense model of the record."""
    return configure(C.dense_model(str(params.model), params.device), params)


def minmax_note(params: MsdParams, modality: str | None) -> str | None:
    """What to say when ``mr_minmax=true`` min-max scales MR for a model whose plans do not say
    its statistics are in min-max units (None otherwise, and for CT).
    """
    from napari_segeval.models.dense import DenseModel

    if not params.mr_minmax or str(modality or "").upper() == "CT":
        return None
    model = C.dense_model(str(params.model), params.device)
    if not isinstance(model, DenseModel) or model.mr_minmax is not None:
        return None
    return (
        f"{model.name}: its plans do not say mr_minmax; ROG's min-max scaling of each MR "
        "channel was applied before its clip and z-score (mr_minmax=true). Unless its "
        "statistics are in min-max units, run it with --param mr_minmax=null"
    )


def _channel(params: MsdParams) -> int | None:
    """The ``channel`` parameter as :func:`~._common.load_case` takes it."""
    return None if params.channel is None else int(params.channel)


def skip_reason(model, attack: Mapping) -> str | None:
    """Why a listed attack does not run on ``model``: APGD-DLR needs >= 3 classes (ROG's rule)."""
    n = model.num_classes
    if str(attack.get("name")) == "apgd-dlr" and n is not None and int(n) < 3:
        return f"apgd-dlr needs at least 3 classes (background included); the model has {n}"
    return None


def _scales(model, clean) -> list[float]:
    """Raw units per normalized unit of each input channel (a ``DenseModel``'s per case)."""
    from napari_segeval.models.dense import DenseModel

    if isinstance(model, DenseModel):  # its result is a DenseResult
        return [float(v) for v in clean.params["preprocess"]["channel_scale"]]
    return [float(model.raw_per_normalized_unit)]


def _score(case, labels, structures, condition, params) -> list[dict]:
    """The rows of one prediction (without a reference: unscored rows that carry the risk)."""
    kw = {"tolerance_mm": params.tolerance_mm, "empty": params.empty}
    return C.score_case(case, labels, structures, condition, surface=bool(params.surface), **kw)


def _risk(model, case, params: MsdParams, condition: str, result, structures) -> tuple[dict, list]:
    """Each structure's risk and the ``slices.csv`` rows of one prediction."""
    from napari_segeval.models.dense import DenseModel
    from napari_segeval.uncertainty.dense import augmented_labels

    n = params.risk_tta
    aug = augmented_labels(model, case, n_samples=n) if n and isinstance(model, DenseModel) else []
    kw = {"condition": condition, "reference": case.labels, "augmented": aug}
    return D.dense_risks(result.labels, result.probabilities, structures, params, **kw)


def run_case(spec, params: MsdParams) -> CaseOutput:
    """Clean prediction plus one per attack, scored per structure, with each one's risk."""
    case = C.load_case(spec, channel=_channel(params), need_labels=not params.risk)
    model = _model(params)
    structures = dict(case.structures or model.structures)
    with_risk = bool(params.risk)
    clean = D.segment(model, case, params, probabilities=with_risk)
    scales = _scales(model, clean)
    preds = {CLEAN: clean.labels}
    rows = _score(case, clean.labels, structures, CLEAN, params)
    risk, slices = _risk(model, case, params, CLEAN, clean, structures) if with_risk else ({}, [])
    risks = {CLEAN: risk}
    eps = {CLEAN: 0.0}
    images: dict = {}
    skipped, gate = [], spec.meta.get("robust_threshold") if params.gate else None
    for attack in params.attacks:
        reason = skip_reason(model, attack)
        if reason is not None:
            skipped.append(reason)
            continue
        if gate is not None and ":" not in str(attack.get("name", "")):
            attack = {"robust_threshold": gate, **attack}
        a = D.run_attack(model, case, attack, params)
        preds[a.condition], eps[a.condition] = a.labels, float(attack.get("eps", 0.0))
        if a.perturbed is not None:
            images.update(D.attack_images(a.condition, a.perturbed, a.perturbation))
        rows += _score(case, a.labels, structures, a.condition, params)
        if with_risk and a.perturbed is not None:
            attacked = replace(case, image=a.perturbed)  # the attacked image, same grid
            res = D.segment(model, attacked, params, probabilities=True)
            risks[a.condition], more = _risk(model, attacked, params, a.condition, res, structures)
            slices += more
    for r in rows:
        if r["label"] in risks.get(r["condition"], {}):
            r["risk"] = risks[r["condition"]][r["label"]]
        e = eps[r["condition"]]
        r["eps"] = e
        if len(scales) == 1:
            r["eps_raw"] = e * scales[0]
        else:
            r.update({f"eps_raw_c{i}": e * s for i, s in enumerate(scales)})
        if gate is not None:
            r["gate_threshold"] = float(gate)
    extra = {"skipped_attacks": "; ".join(sorted(set(skipped)))} if skipped else {}
    note = minmax_note(params, case.modality)
    if note:
        extra["mr_minmax_note"] = note
    return C.output(case, rows, preds, images, extra=extra, slices=slices)


def select(specs: list, params: MsdParams) -> list:
    """The cases with reference labels; without any, every case (for its ``risk``)."""
    labelled = [s for s in specs if s.labels or s.error]
    return labelled if labelled or not params.risk else list(specs)


def prepare(specs, params: MsdParams, output_dir) -> None:
    """With ``gate`` and attacks: each case's ``clean_dice`` and every case's
    ``robust_threshold`` (``spec.meta``) from one clean pass; a case that fails is left out.
    """
    if not params.gate or not params.attacks:
        return
    if params.models:
        raise SegEvalError(
            "gate sets one robust threshold from one model's clean pass; with "
            "several models run each model on its own"
        )
    from napari_segeval.evaluation.summary import case_means
    from napari_segeval.metrics import robust_threshold

    model = _model(params)
    dices = []
    for spec in specs:
        if spec.error or not spec.labels:
            continue
        try:
            case = C.load_case(spec, channel=_channel(params))
            structures = dict(case.structures or model.structures)
            rows = _score(case, D.segment(model, case, params).labels, structures, CLEAN, params)
        except SegEvalError:
            continue
        d = case_means([{**r, "case": spec.case_id} for r in rows]).get((spec.case_id, CLEAN))
        spec.meta["clean_dice"] = d
        dices.append(d)
    threshold = robust_threshold(dices, float(params.robust_factor))
    for spec in specs:
        spec.meta["robust_threshold"] = threshold


def _budget(rows: list[dict]) -> dict:
    """Per condition: epsilon (normalized) and its raw size per channel (mean, min, max over cases)."""
    out: dict = {}
    for r in rows:
        if r.get("condition") == CLEAN or "eps" not in r:
            continue
        b = out.setdefault(r["condition"], {"eps": r["eps"], "raw": {}})
        for k, v in r.items():
            if k == "eps_raw" or k.startswith("eps_raw_c"):
                b["raw"].setdefault(k, {})[r.get("case")] = float(v)
    for b in out.values():
        b["eps_raw"] = {
            k: {
                "mean": float(np.mean(list(v.values()))),
                "min": float(min(v.values())),
                "max": float(max(v.values())),
            }
            for k, v in b.pop("raw").items()
        }
    return out


def summarize(rows: list[dict], params: MsdParams) -> dict:
    """Mean Dice per structure and task, Dice drop, robust fraction, the rule and the budgets."""
    from napari_segeval.evaluation.summary import robustness

    factor = float(params.robust_factor)
    out = robustness(rows, factor=factor)
    out["robust_accuracy"] = {c: v for c, v in out["task_mean"].items() if c != CLEAN}
    out["robust_accuracy_definition"] = (
        "ROG's 'robust accuracy' (its code's name): the mean attacked Dice over the cases, "
        "each case's Dice the mean over its structures (a case an attack did not run on, "
        "with gate, keeps its clean Dice); not a fraction of cases: that is robust_fraction"
    )
    out["robust_rule"] = (
        f"A case is robust under an attack when its attacked Dice (mean over its structures) "
        f"is strictly greater than {factor:g} x the task's mean clean Dice; the threshold, "
        f"{out['robust_threshold']:.6g}, is computed once from the clean run and used for "
        "every attack."
    )
    out["budget"] = _budget(rows)
    for column, key, kind in (  # the rows' distinct values: one as it is, several as a list
        ("gate_threshold", "attack_gate_threshold", float),
        ("skipped_attacks", "skipped_attacks", str),
        ("mr_minmax_note", "mr_minmax_note", str),
    ):
        found = sorted({kind(r[column]) for r in rows if r.get(column) not in (None, "")})
        if found:
            out[key] = found[0] if len(found) == 1 and key != "skipped_attacks" else found
    return out


#: Deliberate differences of the defaults from the published recipe (docs/protocols.md).
DIFFERENCES = differences("msd-robust")


PROTOCOL = Protocol(
    rows=ATTACKED,
    name="msd-robust",
    version="1.4",
    params=MsdParams,
    differences=DIFFERENCES,
    presets={"rog": ROG},
    run_case=run_case,
    model_kind="dense",
    summarize=summarize,
    prepare=prepare,
    select=select,
    description=(
        "Dense model (resample, clip/z-score per channel, Gaussian sliding window, "
        "post-processing), clean and under attacks: mean Dice per structure and "
        "task, Dice drop, fraction of robust cases (attacked Dice > 0.5 x task "
        "mean clean Dice)."
    ),
)

__all__ = [
    "DIFFERENCES",
    "PROTOCOL",
    "ROG",
    "ROG_ATTACKS",
    "ROG_EPS",
    "MsdParams",
    "configure",
    "minmax_note",
    "prepare",
    "run_case",
    "skip_reason",
    "summarize",
]
