"""``cv5-2d``: 5-fold cross-validated 2D segmentation, mDSC/mIoU/mRec/mPrec in percent
(Borst et al. 2026; ``docs/protocols.md``); the fold models are in :mod:`._cv5_folds`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from napari_segeval._names import CLEAN, unnamed_label
from napari_segeval.evaluation.protocols import CaseOutput, Preset, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _dense as D
from napari_segeval.evaluation.protocols._cv5_folds import (
    BUILTIN,
    META_KEY,
    TRAIN_KEYS,
    fold_model,
    is_holdout,
    prepare,
    train_config,
)
from napari_segeval.evaluation.protocols._params import (
    Params,
    choice,
    differences,
    empty,
    listed,
    number,
)
from napari_segeval.evaluation.rows import FOLDS


def select(specs: Sequence, params: Cv5Params) -> list:
    """Cases with a fold, labelled cases of the ``holdout`` split, and cases that failed to parse."""
    return [
        s for s in specs if s.error or (s.labels and s.fold is not None) or is_holdout(s, params)
    ]


def run_case(spec, params: Cv5Params) -> CaseOutput:
    """Segment a 2D image with its fold's model and score every class."""
    model = fold_model(spec, params)
    case = C.load_case(spec)
    res = D.segment(model, case, probabilities=params.risk)
    structures = dict(case.structures or model.structures)
    fg = {k: v for k, v in structures.items() if k}  # risks: one slices.csv row per class
    ref = None if case.labels is None else case.labels[None]
    risks, slices = (
        D.dense_risks(res.labels[None], res.probabilities[:, None], fg, params, reference=ref)
        if params.risk
        else ({}, [])
    )
    if params.include_background:
        structures = class_set(structures, case.labels, res.labels)
    rows = C.score_case(case, res.labels, structures, CLEAN, empty=params.empty, surface=False)
    add_counts(rows, case.labels, res.labels)
    for r in rows:
        if r["label"] in risks:
            r["risk"] = risks[r["label"]]
    extra = {}
    if params.model == BUILTIN:
        extra = {
            "model_file": f"models/{Path(spec.meta[META_KEY]).name}",
            "n_train": len(model.meta["train_cases"]),
        }
    return C.output(case, rows, {CLEAN: res.labels}, extra=extra, slices=slices)


def class_set(structures: dict, reference, prediction) -> dict[int, str]:
    """Every class, background included, with its name, up to the largest id named or present
    in either map."""
    top = max(
        [int(k) for k in structures]
        + [int(reference.max(initial=0)), int(prediction.max(initial=0))]
    )
    names = {0: "background", **{int(k): str(v) for k, v in structures.items()}}
    return {i: names.get(i, unnamed_label(i)) for i in range(top + 1)}


def add_counts(rows: list[dict], reference, prediction) -> None:
    """Add each class's pixel counts (``n_tp``, ``n_ref``, ``n_pred``) to its row, in place."""
    from napari_segeval.metrics import confusion_matrix

    top = max(
        [int(r["label"]) for r in rows]
        + [int(reference.max(initial=0)), int(prediction.max(initial=0)), 0]
    )
    cm = confusion_matrix(reference, prediction, top + 1)
    for r in rows:
        k = int(r["label"])
        r.update(n_tp=int(cm[k, k]), n_ref=int(cm[k].sum()), n_pred=int(cm[:, k].sum()))


#: The two readings of the class-averaged metrics (``headline`` chooses the summary's).
READINGS = {
    "per-image": {
        "definition": (
            "per image: each class of the image scored (both-empty by 'empty'), "
            "averaged over the classes; mean over a fold's images, then mean +- "
            "std (ddof=1) over folds, in percent"
        ),
        "names": {"dice": "mDSC", "iou": "mIoU", "recall": "mRec", "precision": "mPrec"},
    },
    "accumulated": {
        "definition": (
            "mmsegmentation's IoUMetric: per class, intersection, prediction and "
            "reference areas summed over all images of a fold; Dice, IoU, "
            "precision and recall from those sums (NaN where a denominator is "
            "zero over the fold); mean over the classes with a value (background "
            "included when scored); then mean +- std (ddof=1) over folds, in "
            "percent"
        ),
        "names": {"dice": "mDice", "iou": "mIoU", "recall": "mRecall", "precision": "mPrecision"},
    },
}


@dataclass(frozen=True)
class Cv5Params(Params):
    """``cv5-2d``'s parameters; the built-in model's training numbers are refused (one line)
    before any case runs or trains.
    """

    model: str | None = BUILTIN
    device: str | None = None
    folds: int = 5
    seed: int = number(0, "a whole number", whole=True)
    include_background: bool = False
    empty: str = empty()
    iterations: int = 300
    batch_size: int = 4
    lr: float = 0.003
    size: list = listed(64, 80)
    width: int = 16
    train_threads: int = 1
    cv_splits: dict = field(default_factory=dict)
    holdout: str | None = None
    headline: str = choice("per-image", READINGS)
    risk: bool = True

    def check(self) -> None:
        """The fields' rules, then the built-in model's training numbers (:func:`train_config`)."""
        super().check()
        if self.model == BUILTIN:
            train_config(self, 0)


def summarize(rows: list[dict], params: Cv5Params) -> dict:
    """Class-averaged metrics, mean +- std over folds, in percent: the ``headline`` reading,
    the other under its name, ``pooled`` counts, ``holdout`` cases and the training recipe.
    """
    from napari_segeval.evaluation.summary import (
        accumulated_scores,
        cross_validation,
        holdout_scores,
        is_absent,
        over_folds,
        pooled_scores,
    )

    cv = [r for r in rows if r.get("fold") is not None]
    held = [r for r in rows if r.get("fold") is None]
    empty, headline = params.empty, params.headline
    numbers = {"per-image": cross_validation(cv), "accumulated": over_folds(cv, accumulated_scores)}
    other = next(k for k in READINGS if k != headline)
    absent = [r for r in cv if is_absent(r)]
    out = {
        "background_included": bool(params.include_background),
        "empty": empty,
        "headline": {"reading": headline, **READINGS[headline]},
        "names": READINGS[headline]["names"],
        **numbers[headline],
        other.replace("-", "_"): {**READINGS[other], **numbers[other]},
        "pooled": over_folds(cv, partial(pooled_scores, empty=empty), ("average", "micro")),
        "absences": {
            "rows": len(absent),
            "note": (
                "rows of a class absent from both the image's reference and "
                "its prediction (results.csv: absent); the per-image reading "
                f"scores them by empty={empty}, the accumulated reading "
                "adds nothing for them"
            ),
        },
    }
    if held:
        out["holdout"] = {"split": params.holdout, **holdout_scores(held, empty=empty)}
    if params.model == BUILTIN:
        n_train = {str(r["fold"]): int(r["n_train"]) for r in rows if r.get("n_train") is not None}
        out["model"] = {
            "name": BUILTIN,
            "trained_per_fold": True,
            "architecture": "2D U-Net, 4 levels",
            "loss": "cross-entropy + soft Dice",
            "augmentation": "random horizontal/vertical flips",
            "optimizer": "AdamW, cosine decay",
            "seed": f"{params.seed} + fold",
            **{k: params.to_json()[k] for k in TRAIN_KEYS},
            "n_train_per_fold": dict(sorted(n_train.items())),
            "files": "models/fold{k}.pt (+ fold{k}.json: training cases)"
            + ("; models/all.pt scores the held-out split" if held else ""),
        }
    return out


#: Deliberate differences of the defaults from the published recipe (docs/protocols.md).
DIFFERENCES = differences("cv5-2d")


#: The paper preset (docs/protocols.md, "cv5-2d preset borst2026", lists the same).
BORST2026 = Preset(
    name="borst2026",
    params={
        "folds": 5,
        "include_background": True,
        "headline": "accumulated",
        "empty": "zero",
        "cv_splits": {},
    },
    source=(
        'Borst & Kounev, "Are General-Purpose Vision Models All We Need for 2D Medical '
        'Image Segmentation?", arXiv 2603.13044 (2026), and its public code'
    ),
    differences=differences("cv5-2d borst2026"),
)


PROTOCOL = Protocol(
    rows=FOLDS,
    name="cv5-2d",
    version="1.4",
    params=Cv5Params,
    differences=DIFFERENCES,
    presets={BORST2026.name: BORST2026},
    run_case=run_case,
    summarize=summarize,
    select=select,
    prepare=prepare,
    needs_folds=True,
    description=(
        "5-fold cross-validated 2D segmentation: mDSC, mIoU, mRec, mPrec in "
        "percent per class and averaged (per image, or accumulated over a fold's "
        "images as mmsegmentation does: headline), mean +- std over folds; the "
        "built-in 2D U-Net is trained per fold on the other folds."
    ),
)
