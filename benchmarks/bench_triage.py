"""Finding failures without a reference: the risk signals, measured as the literature does.

Every structure of some volumes is box-prompted on its middle slice and propagated with
the project's recipe (``medsam2-3d``'s prompts and options, merged scoring); each slice
and structure gets its risk signals (:mod:`napari_segeval.uncertainty.risk`) and its true
Dice. Parts:

``fit``
    Fit the combined risk (slice and structure logistic models) on the *tuning*
    phantoms (CT seeds 500-509: the seeds LiteMedSAM's stop was chosen on, disjoint from
    every reported number) and write ``napari_segeval/uncertainty/risk_model.json``::

        python benchmarks/bench_triage.py --part fit --models litemedsam builtin

``measure``
    For each signal and the combined risk, per structure (failure: Dice < 0.75) and per
    slice (failure: slice Dice < 0.5), on clean runs: failure AUROC, AURC and its
    random and optimal values, normalised AURC, Recall@10 %, on (a) held-out CT
    phantoms (seeds 2000-2009), (b) the sample task, (c) the MNI152 template; clean
    and under PGD (``--eps``, default ROG's 8/255, 5 steps, crafted through the whole
    chain), with whether attacked structures whose Dice fell by >= 0.1 rank above their
    clean twins (AUROC)::

        python benchmarks/bench_triage.py --part measure --models litemedsam builtin

``rounds``
    The correction loop without a reference: the ``interactive`` protocol's Dice gained
    over 3 box rounds with ``slice_choice`` risk, oracle and random (target: risk >= 70 %
    of the oracle's gain and >= 2x random's), on the sample task and the held-out
    phantoms (written as an MSD task in a temporary folder)::

        python benchmarks/bench_triage.py --part rounds --models litemedsam --cases 2

``cost``
    The signals' cost over the propagation alone (LiteMedSAM: jittered boxes decoded on
    the cached embeddings)::

        python benchmarks/bench_triage.py --part cost
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # _mni

TUNING = range(500, 510)
HELDOUT = range(2000, 2010)
#: PGD budgets of ``measure`` (normalized units: the CT window's width is 1): ROG's
#: 8/255, ``msd-robust``'s ``rog`` preset
EPS = (8 / 255,)


def volumes(which: str, n: int | None = None) -> list:
    """``(name, case, modality)`` of a set: tuning, heldout, sample or mni."""
    from napari_segeval.phantoms.ct import make_ct_case

    if which in ("tuning", "heldout"):
        seeds = list(TUNING if which == "tuning" else HELDOUT)[: n or None]
        return [(f"ct{s}", make_ct_case(s), "CT") for s in seeds]
    if which == "sample":
        from napari_segeval.io import read_case

        root = ROOT / "sample_data/msd_task/Task90_AbdomenPhantom"
        files = sorted((root / "imagesTr").glob("*.nii.gz"))[: n or None]
        return [(f.name, read_case(f, labels=root / "labelsTr" / f.name), "CT") for f in files]
    from _mni import mni_case

    return [("mni152", mni_case(), "MR")]


def run_volume(
    model, case, modality: str, eps: list[float] = (), name: str = ""
) -> tuple[list, list]:
    """Structure and slice records of one volume, clean and under PGD at each of ``eps``
    (normalized units, 5 steps, crafted against the same prompts through the whole
    chain: :class:`~napari_segeval.attacks.PromptTarget`): signals, risks, true Dice."""
    from napari_segeval.evaluation.protocols._promptable import prompt_sets, reference_prompts
    from napari_segeval.evaluation.triage import risk_rows
    from napari_segeval.metrics.table import structures_to_score
    from napari_segeval.propagation import PropagationOptions, propagate_case

    frames = model.preprocess(case.image, modality)
    structures = structures_to_score(case.structures, case.labels)
    boxes = reference_prompts(case.labels, structures, jitter=0, rng=np.random.default_rng(0))
    sets = prompt_sets(boxes, case.labels, "box")
    conditions = {"clean": frames, **attacked_frames(model, case, modality, sets, eps)}
    srows, rows = [], []
    for condition, x in conditions.items():
        res = propagate_case(model, x, sets, PropagationOptions(mode="volume"))
        masks = {b.label: res.labels == b.label for b in boxes}
        risks, r = risk_rows(
            res.structures, masks, structures, model=model.name, condition=condition,
            reference=case.labels,
        )  # fmt: skip
        rows += r
        for b in boxes:
            ref, m = case.labels == b.label, masks[b.label]
            total = int(ref.sum()) + int(m.sum())
            srows.append(
                {
                    "structure": structures.get(b.label, str(b.label)),
                    "twin": (name, b.label),
                    "condition": condition,
                    "dice": 1.0 if total == 0 else 2.0 * int((ref & m).sum()) / total,
                    "risk": risks[b.label].risk,
                    "slices": risks[b.label].slices,
                    "stops": risks[b.label].stops,
                }
            )
    return srows, rows


def attacked_frames(model, case, modality: str, sets, eps) -> dict:
    """Condition name -> the frames under PGD at each budget of ``eps`` (5 steps, L-inf,
    the reference labels as target), crafted through the whole chain."""
    from dataclasses import replace

    import torch

    from napari_segeval.attacks import PromptTarget, attack_case
    from napari_segeval.attacks import condition_name as attack_condition
    from napari_segeval.evaluation.protocols._dense import attack_config

    if not eps:
        return {}
    target = PromptTarget(model, replace(case, modality=modality), sets, mode="volume")
    out = {}
    for e in eps:
        config = attack_config({"name": "pgd", "eps": e, "steps": 5})
        res = attack_case(target, config, clamp=True, reference="labels")
        delta = torch.as_tensor(res.perturbation_normalized, device=target.x.device)
        out[attack_condition(res.params["attack"])] = (target.x[0] + delta).detach()
    return out


#: The structure model's features (:func:`~napari_segeval.uncertainty.risk.structure_features`):
#: the slice risks' summaries, the quality stop, and the area-weighted mean entropy and
#: IoU estimate, each alone a better structure ranker than the slice risks' summaries
STRUCTURE_NAMES = ["mean_risk", "max_risk", "quality_stop", "n_slices", "mean_entropy", "mean_iou"]


def fit_risk(srows: list, rows: list, slice_names: list, structure_names: list, provenance):
    """The slice model fitted on ``rows`` (failure: slice Dice < 0.5), then the structure
    model on ``srows`` rescored by it (failure: Dice < 0.75): a :class:`RiskModel`."""
    from napari_segeval.uncertainty.risk import RiskModel, Signal, fit_logistic

    slice_x = [{s.value: float(r[s.value]) for s in Signal} for r in rows]
    slice_y = [float(r["dice"]) < 0.5 for r in rows]
    slice_model = fit_logistic(slice_names, slice_x, slice_y)
    rescore_slices(srows, slice_model)
    feats = [structure_features_of(s) for s in srows]
    ys = [s["dice"] < 0.75 for s in srows]
    return RiskModel(
        slice_model,
        fit_logistic(structure_names, feats, ys),
        {
            **provenance,
            "n_slices": len(slice_y),
            "n_slice_failures": int(sum(slice_y)),
            "n_structures": len(ys),
            "n_structure_failures": int(sum(ys)),
        },
    )


def structure_features_of(s: dict) -> dict:
    from napari_segeval.uncertainty.risk import structure_features

    return structure_features(s["slices"], bool(s["stops"]))


def fit(args) -> int:
    from napari_segeval.uncertainty.risk import Signal

    seeds = list(TUNING)[: args.cases or None]
    if args.load:
        srows, rows = _from_json(json.loads(Path(args.load).read_text()))
    else:
        srows, rows = [], []
        for name in args.models:
            model = load(name, args.jitter)
            for vname, case, modality in volumes("tuning", args.cases):
                t0 = time.perf_counter()
                s, r = run_volume(model, case, modality)
                srows += s
                rows += r
                print(f"  {name} {vname}: {len(s)} structures, "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
        if args.save:
            Path(args.save).write_text(json.dumps(_to_json(srows, rows)))
    command = "python benchmarks/bench_triage.py --part fit --models " + " ".join(args.models)
    risk_model = fit_risk(
        srows,
        rows,
        [s.value for s in Signal],
        STRUCTURE_NAMES,
        {
            "fitted_on": f"CT phantoms (make_ct_case) seeds {seeds[0]}-{seeds[-1]}",
            "models": list(args.models),
            "command": command + (f" --cases {args.cases}" if args.cases else ""),
        },
    )
    out = ROOT / "napari_segeval/uncertainty/risk_model.json"
    out.write_text(json.dumps(risk_model.to_dict(), indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}: {json.dumps(risk_model.provenance)}")
    return 0


def load(name: str, jitter: int = 0):
    """The model ``name``; LiteMedSAM with ``jitter`` boxes a slice for its box-jitter
    signal (``--jitter``; its default is off: the signal costs about a propagation and
    ranked failures worse than the others)."""
    from napari_segeval.models.registry import load_promptable

    model = load_promptable(name)
    if name == "litemedsam":
        model.risk_jitter = jitter
    return model


def _scores(srows, rows) -> dict:
    """Per signal (and the combined risk): structure and slice score arrays."""
    from napari_segeval.uncertainty.risk import Signal

    out = {"structure": {}, "slice": {}}
    out["structure"]["risk"] = [s["risk"] for s in srows]
    out["slice"]["risk"] = [r["risk"] for r in rows]
    for sig in Signal:
        vals = [r[sig.value] for r in rows]
        out["slice"][sig.value] = vals
    # a structure's value of one signal: the area-weighted mean over its slices
    features = [structure_features_of(s) for s in srows]
    for sig in Signal:
        out["structure"][sig.value] = [f.get(f"mean_{sig.value}", math.nan) for f in features]
    return out


def report(title: str, srows: list, rows: list) -> None:
    from napari_segeval.uncertainty.failure import failure_detection

    scores = _scores(srows, rows)
    for level, dice, below in (
        ("structure", [s["dice"] for s in srows], 0.75),
        ("slice", [r["dice"] for r in rows], 0.5),
    ):
        n_fail = sum(d < below for d in dice)
        print(f"{title} {level}: n={len(dice)} failures={n_fail}")
        for name, vals in scores[level].items():
            v = np.asarray(vals, float)
            if not np.isfinite(v).any():
                continue
            fd = failure_detection(np.nan_to_num(v, nan=0.0), np.asarray(dice, float),
                                   failure_below=below)  # fmt: skip
            print(
                f"  {name:11s} AUROC {fd.failure_auroc:.3f}  AURC {fd.aurc:.3f} "
                f"(random {fd.random_aurc:.3f}, optimal {fd.optimal_aurc:.3f})  "
                f"nAURC {fd.normalised_aurc:.3f}  Recall@10% {fd.recall_at_10:.3f}"
            )
    # The reference's slices beyond the slice after a chain's end have no prediction and no
    # row in a run without a reference: the risk on the rows such a run has, beside.
    own = [r for r in rows if r["area"] > 0 or r["end"] > 0]
    if rows and len(own) < len(rows):
        fd = failure_detection(np.asarray([r["risk"] for r in own], float),
                               np.asarray([r["dice"] for r in own], float), failure_below=0.5)  # fmt: skip
        print(f"  risk on the {len(own)} slices a run without a reference has (the prediction's "
              f"and the slice after each end): AUROC {fd.failure_auroc:.3f}")  # fmt: skip


def rescore_slices(srows: list, slice_model) -> None:
    """Every structure's slices' risk again, from their signals, by ``slice_model``."""
    from napari_segeval.uncertainty.risk import SliceRisk

    for s in srows:
        s["slices"] = tuple(
            SliceRisk(
                x.slice,
                slice_model({k.value: v for k, v in x.signals.items()}),
                x.signals,
                x.flags,
                x.area,
            )  # fmt: skip
            for x in s["slices"]
        )


def rescore(srows: list, rows: list, risk_model) -> None:
    """Every slice's and structure's risk again, from its signals, by ``risk_model``."""
    for r in rows:
        r["risk"] = risk_model.slice(r)
    rescore_slices(srows, risk_model.slice)
    for s in srows:
        s["risk"] = risk_model.structure(structure_features_of(s))


def _to_json(srows: list, rows: list) -> dict:
    def slices(s):
        return [{"slice": x.slice, "area": x.area,
                 "signals": {k.value: v for k, v in x.signals.items()}} for x in s]  # fmt: skip

    def listed(s):
        return {**s, "twin": list(s.get("twin", ())), "slices": slices(s["slices"]),
                "stops": [list(x) for x in s["stops"]]}  # fmt: skip

    return {"rows": rows, "srows": [listed(s) for s in srows]}


def _from_json(d: dict) -> tuple[list, list]:
    from napari_segeval.uncertainty.risk import Signal, SliceRisk

    srows = [
        {
            **s,
            "twin": tuple(s["twin"]),
            "stops": tuple(tuple(x) for x in s["stops"]),
            "slices": tuple(
                SliceRisk(
                    x["slice"],
                    math.nan,
                    {Signal(k): v for k, v in x["signals"].items()},
                    (),
                    x["area"],
                )  # fmt: skip
                for x in s["slices"]
            ),
        }
        for s in d["srows"]
    ]
    return srows, d["rows"]


def measure(args) -> int:
    """Collect (or ``--load``) every model's and set's records, score them with the
    shipped risk model read at the end, report."""
    from napari_segeval.uncertainty.risk import RiskModel

    collected: dict = json.loads(Path(args.load).read_text()) if args.load else {}
    if not args.load:
        for name in args.models:
            model = load(name, args.jitter)
            for which in args.sets:
                srows, rows = [], []
                for vname, case, modality in volumes(which, args.cases):
                    s, r = run_volume(model, case, modality, args.eps, vname)
                    srows += s
                    rows += r
                    print(f"  {name} {which} {vname}: {len(s)} structure runs", flush=True)
                    collected[f"{name} {which}"] = _to_json(srows, rows)
                    if args.save:  # after each volume: a long run keeps what it measured
                        Path(args.save).write_text(json.dumps(collected))
    risk_model = RiskModel.load()
    print(f"risk model: {json.dumps(risk_model.provenance)}")
    for title, data in collected.items():
        srows, rows = _from_json(data)
        rescore(srows, rows, risk_model)
        report_conditions(title, srows, rows)
    return 0


def report_conditions(title: str, srows: list, rows: list) -> None:
    """:func:`report` of the clean runs, of the attacked ones (if any), and :func:`twins`."""
    for cond in ("clean", "attacked"):
        pick = (lambda c: c == "clean") if cond == "clean" else (lambda c: c != "clean")
        s = [x for x in srows if pick(x.get("condition", "clean"))]
        if s:
            report(f"{title} {cond}", s, [r for r in rows if pick(r.get("condition", "clean"))])
    twins(srows)


def twins(srows: list) -> None:
    """Attacked structures whose Dice fell by >= 0.1 against their clean twins."""
    from napari_segeval.uncertainty.failure import failure_auroc

    clean = {s["twin"]: s for s in srows if s.get("condition", "clean") == "clean"}
    pairs = [(clean[a["twin"]], a) for a in srows if a.get("condition", "clean") != "clean"]
    if not pairs:
        return
    hit = [(c, a) for c, a in pairs if c["dice"] - a["dice"] >= 0.1]
    if not hit:
        print(f"  twins: no attacked structure of {len(pairs)} lost >= 0.1 Dice")
        return
    score = [c["risk"] for c, _ in hit] + [a["risk"] for _, a in hit]
    failed = [False] * len(hit) + [True] * len(hit)
    print(f"  twins: {len(hit)} of {len(pairs)} attacked structures lost >= 0.1 Dice; their "
          f"risk above their clean twins': AUROC {failure_auroc(score, failed):.3f} "
          "(target >= 0.9)")  # fmt: skip


def task_folder(which: str, n: int | None, where: Path) -> Path:
    """The MSD task folder of a set: the sample task, or the volumes of :func:`volumes`
    written under ``where``."""
    from napari_segeval.io import write_image, write_labels

    if which == "sample":
        return ROOT / "sample_data/msd_task/Task90_AbdomenPhantom"
    root = where / f"Task81_{which}"
    (root / "imagesTr").mkdir(parents=True, exist_ok=True)
    (root / "labelsTr").mkdir(exist_ok=True)
    training, names, modality = [], {"0": "background"}, "CT"
    for vname, case, kind in volumes(which, n):
        modality = kind
        write_image(root / "imagesTr" / f"{vname}.nii.gz", case.image, case.geometry)
        write_labels(root / "labelsTr" / f"{vname}.nii.gz", case.labels, case.geometry)
        training.append({"image": f"./imagesTr/{vname}.nii.gz", "label": f"./labelsTr/{vname}.nii.gz"})  # fmt: skip
        names.update({str(k): v for k, v in case.structures.items()})
    (root / "dataset.json").write_text(
        json.dumps({"modality": {"0": modality}, "labels": names, "training": training})
    )
    return root


def rounds(args) -> int:
    """Mean Dice gained from round 0 to round 3 per slice choice, per model and set."""
    import tempfile

    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.evaluation.store import load_records, result_rows

    tmp = Path(tempfile.mkdtemp())
    for which in [w for w in args.sets if w != "mni"]:
        specs = load_layout(task_folder(which, args.cases, tmp))[: args.cases or None]
        for name in args.models:
            gains = {}
            for choice in ("oracle", "risk", "random"):
                out = tmp / f"{which}-{name}-{choice}"
                params = {"model": name, "rounds": 3, "refine_prompt": "box", "slice_choice": choice}  # fmt: skip
                run_evaluation(specs, "interactive", out, params=params, workers=1, report=False)
                rows = [r for r in result_rows(load_records(out)[1]) if r.get("status") == "ok"]
                by: dict = {}
                for r in rows:
                    by.setdefault((r["case"], r["label"]), {})[int(r["round"])] = float(r["dice"])
                gain = [d[3] - d[0] for d in by.values() if 0 in d and 3 in d]
                gains[choice] = float(np.mean(gain)) if gain else math.nan
            o, r, x = gains["oracle"], gains["risk"], gains["random"]
            print(f"{name}, {which} ({len(specs)} cases): mean Dice gained in 3 box rounds: "
                  f"oracle {o:+.4f}, risk {r:+.4f}, random {x:+.4f}; {_round_ratios(o, r, x)}",
                  flush=True)  # fmt: skip
    return 0


def _round_ratios(oracle: float, risk: float, random: float) -> str:
    """The targets' ratios (risk >= 70 % of the oracle's gain, >= 2x random's), or why
    there is none: a ratio of gains is meaningless when the divisor gained nothing."""
    if not oracle > 0:
        return "no ratio: the oracle's own corrections gained nothing"
    parts = [f"risk {risk / oracle:.0%} of the oracle's (target >= 70 %)"]
    if random > 0:
        parts.append(
            f"risk / random {risk / random:.2f} (target >= 2; the oracle's own {oracle / random:.2f})"
        )
    else:
        parts.append("random gained nothing: no risk / random ratio")
    return ", ".join(parts)


def cost(args) -> int:
    """Propagation alone against propagation with every signal and the risk rows, on the
    same volume in one process (best of ``--repeat``, interleaved)."""
    from napari_segeval.evaluation.protocols._promptable import prompt_sets, reference_prompts
    from napari_segeval.evaluation.triage import risk_rows
    from napari_segeval.metrics.table import structures_to_score
    from napari_segeval.propagation import PropagationOptions, propagate_case

    model = load("litemedsam", args.jitter)
    ((_, case, modality),) = volumes("sample", 1)
    frames = model.preprocess(case.image, modality)
    names = structures_to_score(case.structures, case.labels)
    boxes = reference_prompts(case.labels, names, jitter=0, rng=np.random.default_rng(0))
    sets = prompt_sets(boxes, case.labels, "box")
    jitter = model.risk_jitter
    best = {"alone": math.inf, "with risk": math.inf}
    for _ in range(args.repeat):
        for what in best:
            model.risk_jitter = jitter if what == "with risk" else 0
            t0 = time.perf_counter()
            res = propagate_case(model, frames, sets, PropagationOptions(mode="volume"))
            if what == "with risk":
                masks = {b.label: res.labels == b.label for b in boxes}
                risk_rows(res.structures, masks, names, model="litemedsam")
            best[what] = min(best[what], time.perf_counter() - t0)
    ratio = best["with risk"] / best["alone"]
    print(
        f"litemedsam, {len(boxes)} structures of {case.image.shape[0]} slices: propagation "
        f"{best['alone']:.1f} s, with {jitter} jittered boxes a slice and the risk rows "
        f"{best['with risk']:.1f} s: {ratio:.2f}x (target <= 1.5x)"
    )
    return 0 if ratio <= 1.5 else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("fit", "measure", "rounds", "cost"), default="measure")
    ap.add_argument("--models", nargs="+", default=["litemedsam"])
    ap.add_argument("--sets", nargs="+", default=["heldout", "sample", "mni"])
    ap.add_argument("--cases", type=int, default=None, help="at most this many volumes per set")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2, help="cost: best of this many")
    ap.add_argument("--jitter", type=int, default=0,
                    help="LiteMedSAM: jittered boxes a slice for the jitter signal (0: off)")  # fmt: skip
    ap.add_argument("--eps", type=float, nargs="*", default=list(EPS),
                    help="measure: PGD budgets (normalized units) beside the clean runs")  # fmt: skip
    ap.add_argument("--save", help="fit, measure: write the collected records (JSON) here")
    ap.add_argument("--load", help="fit, measure: use the records of --save, run nothing")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    return {"fit": fit, "measure": measure, "rounds": rounds, "cost": cost}[args.part](args)


if __name__ == "__main__":
    raise SystemExit(main())
