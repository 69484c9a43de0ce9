"""The ``uncertainty`` protocol's training-filter loop (Li et al., CVPR 2026; described in
``docs/protocols.md``). The training cases travel from :func:`select` to :func:`prepare` on
the test cases' ``train_specs``. The protocol's AdamW default learns more in a few hundred
CPU steps than the preset's (the paper's SGD with poly decay from 0.01).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _dense as D

if TYPE_CHECKING:
    from napari_segeval.evaluation.protocols.uncertainty import UncertaintyParams

#: spec.meta key written by :func:`prepare`.
META_KEY = "li2026"
#: The condition trained with the DUO loss on every training case.
DUO = "DUO"


def condition_name(fraction: float) -> str:
    """``0`` -> ``"unfiltered"``, ``0.05`` -> ``"filtered 5%"``."""
    if float(fraction) == 0.0:
        return "unfiltered"
    return f"filtered {float(fraction) * 100:g}%"


def split(specs: Sequence, params: UncertaintyParams) -> tuple[list, list, str]:
    """``(train, test, source)`` of the labelled cases: the published test split, else a seeded
    hold-out of ``holdout`` of them (at least one case, and two left to train on).
    """
    labelled = [s for s in specs if s.labels and not s.error]
    test = [s for s in labelled if s.split == "test"]
    if test:
        train = [s for s in labelled if s.split == "train"]
        source = f"published split: {len(train)} train, {len(test)} test"
    else:
        ids = sorted(s.case_id for s in labelled)
        n = len(ids)
        n_test = min(max(1, round(float(params.holdout) * n)), n - 2)
        if n_test < 1:
            raise SegEvalError(f"{n} labelled cases: too few to hold out a test set and train")
        order = np.random.default_rng(params.seed).permutation(n)
        chosen = {ids[j] for j in order[:n_test]}
        test = [s for s in labelled if s.case_id in chosen]
        train = [s for s in labelled if s.case_id not in chosen]
        source = (
            f"seeded hold-out ({float(params.holdout):.0%} of {n} labelled cases, "
            f"seed {params.seed})"
        )
    if len(train) < 2:
        raise SegEvalError(f"only {len(train)} training case(s) with labels: need at least 2")
    return train, test, source


def select(specs: Sequence, params: UncertaintyParams) -> list:
    """The test cases (plus cases with a parse error); the training cases ride along for prepare."""
    train, test, source = split(specs, params)
    broken = [s for s in specs if s.error]
    for s in test:
        s.meta = {**s.meta, "li2026_split": source}
        s.train_specs = tuple(train)
    return test + broken


def train_config(params: UncertaintyParams, loss: str = "ce-dice"):
    """The :class:`~napari_segeval.training.dense_cases.DenseTrainConfig` of ``params``."""
    from napari_segeval.training.dense_cases import DenseTrainConfig

    return DenseTrainConfig(
        iterations=int(params.train_iterations),
        batch=int(params.train_batch),
        lr=float(params.train_lr),
        optimizer=str(params.train_optimizer),
        # cast, not unpacked: the training refuses a list of another length
        patch_size=cast("tuple[int, int, int]", tuple(int(v) for v in params.train_patch)),
        base_channels=int(params.train_width),
        seed=params.seed,
        threads=int(params.threads),
        loss=loss,
        duo_alpha=float(params.duo_alpha),
    )


def _auv(train: Sequence, params: UncertaintyParams, out: Path) -> dict:
    """The training cases' AUV record (``auv.json``, ``auv.csv``), made once per fingerprint."""
    from napari_segeval.evaluation.protocols.auv_scores import score_cases, write_scores

    # the AUV recipe: the auv_* parameters, in order (each score_cases' name after the prefix)
    recipe = {k: v for k, v in params.to_json().items() if k.startswith("auv_")}

    def make() -> dict:
        opts = {k.removeprefix("auv_"): v for k, v in recipe.items()}  # score_cases' names
        opts["power"] = float(opts.pop("energy_power"))
        record = score_cases(train, device=params.device, threads=int(params.threads), **opts)
        write_scores(out / "auv.csv", record, overwrite=True)
        return record

    key = {"cases": [[s.case_id, list(s.images), s.labels] for s in train], **recipe}
    return C.cached(out / "auv.json", key, make, needs=(out / "auv.csv",))


def _train(train: Sequence, cases: dict, params: UncertaintyParams, path: Path, loss: str) -> dict:
    """The record of the built-in 3D U-Net trained on ``train``, made once per fingerprint."""
    from napari_segeval.training.dense_cases import train_dense_cases

    config = train_config(params, loss)
    ids = sorted(s.case_id for s in train)
    k = C.num_classes(train, [cases[s.case_id] for s in train])

    def fit(target: Path) -> dict:
        structures = {int(i): n for s in train for i, n in s.structures.items()}
        modality = next((s.modality for s in train if s.modality), "CT")
        rec = train_dense_cases(
            [cases[i].image for i in ids],
            [cases[i].labels for i in ids],
            [cases[i].spacing for i in ids],
            k,
            target,
            config,
            structures=structures,
            modality=modality,
            case_ids=ids,
        )
        return {"model": target.name, "num_classes": k, **rec}

    return C.train_once(path, {"train": ids, "k": k, "config": config.to_dict()}, fit)


def prepare(specs: Sequence, params: UncertaintyParams, output_dir: str | os.PathLike) -> None:
    """AUV of the training cases, one training list and model per condition."""
    from napari_segeval.evaluation import store
    from napari_segeval.evaluation.protocols.auv_scores import auv_of
    from napari_segeval.uncertainty import filter_most_uncertain

    test = [s for s in specs if s.train_specs]
    if not test:
        return
    train = list(test[0].train_specs)
    out = Path(output_dir).absolute()
    auv = _auv(train, params, out)
    scores = auv_of(auv)
    by_id = {s.case_id: s for s in train}
    cases: dict = {}
    models: dict[str, str] = {}
    info: dict[str, dict] = {}
    seen: dict[tuple, Path] = {}
    # (name, fraction removed, loss) of every condition, in order
    conditions = [
        (condition_name(f), f, "ce-dice") for f in [0.0, *map(float, params.remove_fractions)]
    ]
    conditions += [(DUO, 0.0, "duo")] if params.duo else []
    for cond, f, loss in conditions:
        kept, removed = filter_most_uncertain(scores, f, str(params.removal_rule))
        key = (tuple(sorted(kept)), loss)
        path = out / "models" / f"li2026_{cond.replace(' ', '_').replace('%', 'pct')}.pt"
        if key in seen:
            path = seen[key]
        elif not all(store.is_done(out, s.case_id) for s in test):
            cases.update({c: C.load_case(by_id[c]) for c in kept if c not in cases})
            _train([by_id[c] for c in kept], cases, params, path, loss)
        seen.setdefault(key, path)
        models[cond] = str(path)
        file = f"models/{Path(path).name}"
        info[cond] = {"n_train": len(kept), "removed": sorted(removed), "model": file, "loss": loss}
    record = {
        "split": test[0].meta.get("li2026_split"),
        "auv_model": auv.get("model"),
        "removal_rule": params.removal_rule,
        "conditions": info,
    }
    store.write_json(out / "li2026.json", record)
    mine = {"models": models, "conditions": info, "auv_model": auv.get("model")}
    for s in test:
        s.train_specs = ()  # used: the workers need only the models
        s.meta = {**s.meta, META_KEY: mine}


def class_rows(case, model, labels, condition: str, params: UncertaintyParams) -> list[dict]:
    """The rows of one prediction: each class (background with ``include_background``)."""
    structures = dict(case.structures or model.structures)
    if params.include_background:
        structures = {0: "background", **structures}
    return C.score_case(case, labels, structures, condition, surface=False)


def run_case(spec, params: UncertaintyParams):
    """Segment a test case with every condition's model and score all classes."""
    from napari_segeval.models.dense.unet2d import TorchThreads

    meta = spec.meta.get(META_KEY)
    if not meta:
        raise SegEvalError(
            f"case {spec.case_id}: no trained models (prepare() did not run); "
            "run the protocol through run_evaluation / segeval evaluate"
        )
    case = C.load_case(spec, channel=int(params.channel))
    rows, preds = [], {}
    for cond, path in meta["models"].items():
        if not Path(path).is_file():
            raise SegEvalError(f"case {spec.case_id}: model file {path} is missing")
        model = C.trained_model(path, params.device, spec.case_id)
        with TorchThreads(int(params.threads)):
            res = D.segment(model, case, params)
        info = meta["conditions"][cond]
        auv = meta.get("auv_model") or {}
        extra = {
            "n_train": info["n_train"],
            "removed": ";".join(info["removed"]),
            "model_file": info["model"],
            "loss": info.get("loss", "ce-dice"),
            "test_split": spec.meta.get("li2026_split", ""),
            "auv_features": f"{auv.get('name')} {auv.get('feature')} ({auv.get('note')})",
        }
        rows += [{**r, **extra} for r in class_rows(case, model, res.labels, cond, params)]
        preds[cond] = np.asarray(res.labels)
    return C.output(case, rows, preds)


def energy_text(power: float) -> str:
    """What the AUV's energy spectrum is, said in the summary."""
    if float(power) == 1.0:
        return "singular values as they are: p_j = s_j / sum s (the authors' released code)"
    if float(power) == 2.0:
        return (
            "squared singular values: p_j = s_j^2 / sum s^2 (the energy as the paper "
            "writes it; the authors' code uses s_j)"
        )
    return f"singular values to the power {float(power):g}: p_j = s_j^{float(power):g} / sum"


def _duo_text(params: UncertaintyParams) -> dict:
    """The DUO condition's loss and denoising, said in the summary."""
    from napari_segeval.training import duo

    return {
        "alpha": float(params.duo_alpha),
        "loss": (
            f"per training patch b and foreground class c: (BCE + 1 - soft Dice of "
            f"the class's softmax probability against the denoised target) / (1 + "
            f"{float(params.duo_alpha):g} S[b, c]), averaged over patches and "
            "classes; S[b, c] = the semantic perception scale of the network's own "
            "logits of c on the patch at that step (the authors' "
            "compute_all_semantic_scales: D x HW matrix, p = (s + 1e-6) / sum, not "
            "detached), as their code computes it, not the frozen model's AUV"
        ),
        "denoising": (
            f"target = label x (1 - sigmoid(noise head)); the noise head (1x1x1 "
            f"convolution on the last decoder features, starting at "
            f"{1 / (1 + math.exp(-duo.NOISE_BIAS)):.3f}) is trained and "
            f"applied from {duo.NOISE_START:.0%} of the iterations on, to "
            f"predict the labelled voxels whose class the network gives a "
            f"probability below {duo.NOISE_THRESHOLD:g}"
        ),
        "training_cases": "every training case (no AUV filtering)",
    }


def summarize(rows: list[dict], params: UncertaintyParams) -> dict:
    """Test-set Dice/mIoU in percent per condition, with its training list."""
    from napari_segeval.evaluation.summary import percent_scores

    conds = sorted(
        {r["condition"] for r in rows}, key=lambda c: (c != "unfiltered", c == DUO, len(c), c)
    )
    out = {}
    for c in conds:
        mine = [r for r in rows if r["condition"] == c]
        first = mine[0]
        out[c] = {
            **percent_scores(mine),
            "n_train": int(first["n_train"]) if "n_train" in first else None,
            "removed": [x for x in str(first.get("removed") or "").split(";") if x],
            "model": first.get("model_file"),
            "loss": first.get("loss", "ce-dice"),
        }
    base = out.get("unfiltered", {}).get("dice")
    for _c, v in out.items():
        v["dice_change"] = (v["dice"] - base) if base is not None else None
    splits = sorted({str(r.get("test_split")) for r in rows if r.get("test_split")})
    summary = {
        "analysis": "filter-training",
        "background_included": bool(params.include_background),
        "metrics": (
            "Dice and IoU per class over all classes (background included: "
            f"{bool(params.include_background)}), both-empty = 1, mean over "
            "classes per case, mean over the test cases, in percent"
        ),
        "test_set": splits[0] if len(splits) == 1 else splits,
        "removal_rule": params.removal_rule,
        "auv_energy": energy_text(params.auv_energy_power),
        "auv_features": next((r["auv_features"] for r in rows if r.get("auv_features")), None),
        "auv_files": "auv.json, auv.csv",
        "conditions": out,
        "models": "models/li2026_<condition>.pt (+ .json: training cases and recipe)",
    }
    if params.duo:
        summary["duo"] = _duo_text(params)
    return summary
