"""``cv5-2d``'s fold models: the built-in 2D U-Net trained per fold on the other folds'
cases into ``OUTPUT/models/fold{k}.pt`` (``all.pt``: the ``holdout`` split), or a model
reference with ``{fold}`` replaced."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.protocols import _common as C

if TYPE_CHECKING:
    from napari_segeval.evaluation.protocols.cv5_2d import Cv5Params

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
    """The record of the built-in 2D U-Net trained on ``train`` into ``path`` (once per key)."""
    from napari_segeval.models.dense.unet2d import FORMAT_VERSION
    from napari_segeval.training.unet2d import train_unet2d

    config = train_config(params, fold)
    if not train:
        raise SegEvalError(f"cv5-2d fold {fold}: no training cases")
    cases = [C.load_case(s) for s in train]
    k = C.num_classes(train, cases)
    key = {"v": FORMAT_VERSION, "k": k, "config": config.to_dict()}
    key["train"] = [[s.case_id, list(s.images), s.labels] for s in train]

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
        done = {"fold": int(fold), "model": target.name, "num_classes": k}
        done.update(train_cases=model.meta["train_cases"], config=config.to_dict())
        return {**done, **{m: model.meta[m] for m in ("final_loss", "train_seconds", "device")}}

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
    by_fold = {f: [s for s in usable if int(s.fold) == f] for f in folds}
    # (fold, its cases, the training cases, the model file's stem)
    jobs = [(f, by_fold[f], [s for s in usable if int(s.fold) != f], f"fold{f}") for f in folds]
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
