"""``cv5-2d``: 5-fold cross-validated 2D segmentation, mDSC/mIoU/mRec/mPrec in percent.

The recipe (Borst et al. 2026), folds, ``holdout`` and the two readings (:data:`READINGS`)
are described in ``docs/protocols.md``. With ``model="builtin-2d"`` :func:`prepare` trains
a small 2D U-Net per fold (seed ``seed + k``) on the other folds' cases into
``OUTPUT/models/fold{k}.pt`` (with ``fold{k}.json``, reused while its fingerprint
matches); workers load it with ``weights_only=True`` and refuse a case among its training
cases. Any other ``model`` is a dense model reference, ``{fold}`` replaced.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from napari_segeval._errors import SegEvalError
from napari_segeval._names import CLEAN, unnamed_label
from napari_segeval.evaluation.protocols import CaseOutput, Preset, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _dense as D
from napari_segeval.evaluation.protocols._params import (
    Params,
    choice,
    empty,
    listed,
    number,
    paragraphs,
)
from napari_segeval.evaluation.rows import FOLDS

BUILTIN = "builtin-2d"
#: spec.meta key holding the fold model's file (set by :func:`prepare`).
META_KEY = "cv5_2d_model"
TRAIN_KEYS = ("iterations", "batch_size", "lr", "size", "width", "train_threads")

#: spec.meta key of a held-out case's model (set by :func:`prepare`), and its file stem.
HOLDOUT_MODEL = "all"


def train_config(params: Cv5Params, fold: int):
    """The :class:`~napari_segeval.models.dense.unet2d.TrainConfig2D` of ``fold`` (seed + fold)."""
    from napari_segeval.models.dense.unet2d import TrainConfig2D

    try:
        return TrainConfig2D(
            iterations=int(params.iterations),
            batch_size=int(params.batch_size),
            lr=float(params.lr),
            # cast, not unpacked: TrainConfig2D refuses a size of another length itself
            size=cast("tuple[int, int]", tuple(int(v) for v in params.size)),
            width=int(params.width),
            seed=params.seed + int(fold),
            threads=int(params.train_threads),
        )
    except (TypeError, ValueError) as exc:
        given = {k: params.to_json()[k] for k in (*TRAIN_KEYS[:-1], "seed", "train_threads")}
        raise SegEvalError(
            f"cv5-2d training parameters must be numbers (size two whole "
            f"numbers), got {given} ({exc})"
        ) from None


def train_fold(train: Sequence, fold: int, params: Cv5Params, path: str | os.PathLike) -> dict:
    """Train the built-in 2D U-Net on ``train`` (case specs) and save it at ``path``.

    A model already there with the same fingerprint is kept
    (:func:`~napari_segeval.evaluation.protocols._common.train_once`). Returns its fold record.
    """
    from napari_segeval.models.dense.unet2d import FORMAT_VERSION
    from napari_segeval.training.unet2d import train_unet2d

    config = train_config(params, fold)
    if not train:
        raise SegEvalError(f"cv5-2d fold {fold}: no training cases")
    cases = [C.load_case(s) for s in train]
    k = C.num_classes(train, cases)
    key = {
        "v": FORMAT_VERSION,
        "k": k,
        "config": config.to_dict(),
        "train": [[s.case_id, list(s.images), s.labels] for s in train],
    }

    def fit(target: Path) -> dict:
        structures = {int(i): n for s in train for i, n in s.structures.items()}
        model = train_unet2d(
            [c.image for c in cases],
            [c.labels for c in cases],
            k,
            config,
            case_ids=[s.case_id for s in train],
            structures=structures,
            device=params.device or "cpu",
        )
        model.save(target)
        return {
            "fold": int(fold),
            "model": target.name,
            "num_classes": k,
            "train_cases": model.meta["train_cases"],
            "config": config.to_dict(),
            "final_loss": model.meta["final_loss"],
            "train_seconds": model.meta["train_seconds"],
            "device": model.meta["device"],
        }

    return C.train_once(path, key, fit)


def prepare(specs: Sequence, params: Cv5Params, output_dir: str | os.PathLike) -> None:
    """Train (or reuse) one built-in model per fold with unfinished cases, and one on every
    cross-validated case for the ``holdout`` split; point each case's spec at its file.
    """
    from napari_segeval.evaluation import store

    if params.model != BUILTIN:
        return
    out = Path(output_dir).absolute()
    usable = [s for s in specs if s.labels and not s.error and s.fold is not None]
    folds = sorted({int(s.fold) for s in usable})
    jobs = [
        (
            fold,
            [s for s in usable if int(s.fold) == fold],
            [s for s in usable if int(s.fold) != fold],
            f"fold{fold}",
        )
        for fold in folds
    ]
    held = [s for s in specs if is_holdout(s, params)]
    if held:  # the held-out split is scored by one model trained on every fold's cases
        jobs.append((len(folds), held, usable, HOLDOUT_MODEL))
    for fold, test, train, name in jobs:
        path = out / "models" / f"{name}.pt"
        for s in test:
            s.meta = {**s.meta, META_KEY: str(path)}
        if all(store.is_done(out, s.case_id) for s in test):
            continue
        train_fold(train, fold, params, path)


def is_holdout(spec, params: Cv5Params) -> bool:
    """Whether ``spec`` is a labelled case of the ``holdout`` split (scored outside the folds)."""
    held = params.holdout
    return bool(held) and spec.split == held and bool(spec.labels) and spec.fold is None


def select(specs: Sequence, params: Cv5Params) -> list:
    """Cases with a fold, labelled cases of the ``holdout`` split, and cases that failed to parse."""
    return [
        s for s in specs if s.error or (s.labels and s.fold is not None) or is_holdout(s, params)
    ]


def fold_model(spec, params: Cv5Params):
    """The model that scores ``spec``: its fold's built-in U-Net, or the ``model`` reference."""
    ref = params.model
    if not ref:
        raise SegEvalError(
            "cv5-2d needs a 2D model: --param model=builtin-2d (trained per "
            "fold) or REF (a file, folder or module:factory; '{fold}' is replaced)"
        )
    if ref != BUILTIN:
        fold = HOLDOUT_MODEL if spec.fold is None else str(spec.fold)
        return C.dense_model(str(ref).replace("{fold}", fold), params.device)
    path = spec.meta.get(META_KEY)
    if not path or not Path(path).is_file():
        raise SegEvalError(
            f"case {spec.case_id}: no trained builtin-2d model for fold "
            f"{spec.fold} ({path or 'prepare() did not run'}); run the protocol "
            "through run_evaluation / segeval evaluate, which trains one per fold"
        )
    return C.trained_model(path, params.device, spec.case_id)


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
    """Every class of ``range(num_classes)``, background included, with its name.

    ``num_classes`` is one more than the largest id named or present in either map.
    """
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
    """Class-averaged metrics, mean +- std over folds, in percent (+ the training recipe).

    The metric keys hold the ``headline`` reading; the other is kept under its own name,
    ``pooled`` the pooled counts and ``holdout`` the held-out split's cases.
    """
    from napari_segeval.evaluation.summary import (
        accumulated_folds,
        cross_validation,
        holdout_scores,
        is_absent,
        pooled_folds,
    )

    cv = [r for r in rows if r.get("fold") is not None]
    held = [r for r in rows if r.get("fold") is None]
    empty, headline = params.empty, params.headline
    numbers = {"per-image": cross_validation(cv), "accumulated": accumulated_folds(cv)}
    other = next(k for k in READINGS if k != headline)
    absent = [r for r in cv if is_absent(r)]
    out = {
        "background_included": bool(params.include_background),
        "empty": empty,
        "headline": {"reading": headline, **READINGS[headline]},
        "names": READINGS[headline]["names"],
        **numbers[headline],
        other.replace("-", "_"): {**READINGS[other], **numbers[other]},
        "pooled": pooled_folds(cv, empty=empty),
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


#: The ISIC 2018 folders and the paper's image count (one sentence, in both lists).
_ISIC = (
    "ISIC 2018: the Training, Validation and Test folders (3,694 images with masks) are "
    "pooled into the folds, which matches the paper's 3,565 images after its duplicate "
    "removal (the Training folder alone has 2,594); the paper does not say which "
    'folders it pooled (cv_splits={"isic": ["train"]} keeps the Training folder only).'
)
_DUPLICATES = (
    "Duplicate and near-duplicate images are kept; the paper removes them (by raw "
    "bytes and perceptual hash) before making folds, so each data set has more "
    "images here (ISIC 2018: 3,694, the paper 3,565)."
)

#: Deliberate differences of the defaults from the published recipe (docs/protocols.md).
DIFFERENCES = (
    *paragraphs("""
        - Dice is 2|A∩B|/(|A|+|B|); the evaluation card given to this project computes mDSC as
          2|A∩B| / (|A∪B| + 1e-6), which is not Dice (recipe bug, corrected).
        - The class averages are per image (headline=per-image); the borst2026 preset reads the
          paper's numbers as mmsegmentation's IoUMetric, per class over all images of a fold
          (headline=accumulated), which the defaults keep in summary.json under accumulated.
        - Background is left out of the class averages unless include_background=true; the paper
          averages over every class, background included.
        - A class absent from both the reference and the prediction of an image scores 1 (empty=one)
          and is marked absent; the evaluation card's +1e-6 scores it 0.
        - Folds are this project's seeded k-fold grouped by patient (or the data set's published
          splits file), saved in splits.json; the paper's fold lists are not published, so each fold
          holds other cases than the paper's.
    """),
    _ISIC,
    _DUPLICATES,
    *paragraphs("""
        - The network is a small built-in 2D U-Net trained per fold (or the model given); the paper
          compares general-purpose vision backbones.
    """),
)


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
    differences=(
        *paragraphs("""
            - The paper does not say how its metrics are aggregated; the headline (mDice, mIoU,
              mRecall, mPrecision: the paper's mDSC, mIoU, mRec, mPrec) is mmsegmentation's
              IoUMetric, the evaluation of the code base of its general-purpose models (SegFormer,
              SegNeXt, InternImage, TransNeXt), which fits the reported numbers: per class, areas
              summed over all images of a fold, background included, classes absent from the whole
              fold left out, then mean +- std over folds.
            - The per-image mean over range(num_classes) of the evaluation card given to this
              project is kept as a secondary figure (summary.json per_image): with an absent class
              scored 0 it caps a NeoPolyp image that holds one of the two polyp classes near 2/3, so
              it cannot give the paper's numbers.
            - In the per-image figure Dice is 2|A∩B|/(|A|+|B|); the evaluation card divides 2|A∩B|
              by |A∪B| + 1e-6, which is not Dice (recipe bug, corrected).
            - In the per-image figure a class absent from both the reference and the prediction
              scores 0 in every metric (empty=zero), as the evaluation card's +1e-6 gives, and is
              marked absent in results.csv; the 1e-6 is not added to other denominators, which
              changes their values by less than one part in a million.
            - Folds are this project's seeded 5-fold grouped by patient, saved in splits.json; the
              paper's fold lists are not published, so each fold holds other cases than the paper's.
        """),
        _ISIC,
        _DUPLICATES,
        *paragraphs("""
            - The network is the built-in small 2D U-Net trained per fold with its short recipe (or
              the model given); the paper fine-tunes ImageNet-pretrained general-purpose backbones
              at 512x512 (AdamW, REX schedule, batch 8, learning rate searched, 150 epochs with
              early stopping).
        """),
    ),
)
PRESETS = {BORST2026.name: BORST2026}


PROTOCOL = Protocol(
    rows=FOLDS,
    name="cv5-2d",
    version="1.4",
    params=Cv5Params,
    differences=DIFFERENCES,
    presets=PRESETS,
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
