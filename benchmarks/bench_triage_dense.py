"""Finding a dense model's failures without a reference: its risk signals, measured.

The dense counterpart of ``bench_triage.py``: the built-in CT U-Net segments generated
CT volumes, clean and under PGD (``msd-robust``'s attack; ``--eps``, normalized units,
default 0.25 and 0.5: ``msd-robust`` has no default budget); every structure and
slice gets its risk signals (``entropy``, ``continuity``,
and ``tta``: agreement with ``--tta`` augmented passes) and its true Dice. Parts:

``fit``
    Fit the dense risk model on the tuning phantoms (CT seeds 500-509, clean and
    attacked) and write ``napari_segeval/uncertainty/risk_model_dense.json``::

        python benchmarks/bench_triage_dense.py --part fit

``measure``
    Per signal and the combined risk, per structure (failure: Dice < 0.75) and per
    slice (failure: slice Dice < 0.5): failure AUROC, AURC beside its random and
    optimal values, normalised AURC and Recall@10 %, clean and attacked, on held-out CT
    phantoms (seeds 2000-2009) and the sample task; and whether attacked structures
    whose Dice fell by >= 0.1 rank above their clean twins (AUROC)::

        python benchmarks/bench_triage_dense.py --part measure

``cost``
    The risk's cost over the clean segmentation alone (probabilities, ``--tta``
    augmented passes and the risk rows)::

        python benchmarks/bench_triage_dense.py --part cost
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from bench_triage import (  # noqa: E402
    TUNING,
    _from_json,
    _to_json,
    fit_risk,
    report_conditions,
    rescore,
    volumes,
)

#: PGD budgets, normalized units: the built-in model's structures begin to fail at 0.25
EPS = [0.25, 0.5]
#: The dense structure model's features (:func:`~napari_segeval.uncertainty.risk.structure_features`):
#: no quality stop (a dense model has no walk) and the structure's agreement with its
#: augmented passes, the strongest single signal per structure
STRUCTURE_NAMES = ["mean_risk", "max_risk", "n_slices", "mean_tta"]


def run_volume(model, name: str, case, *, tta: int, eps: list[float], risk_model=None):
    """Structure and slice records of one volume, clean and attacked."""
    from napari_segeval.evaluation.protocols import _dense as D
    from napari_segeval.evaluation.triage import dense_risk_rows
    from napari_segeval.metrics.table import structures_to_score
    from napari_segeval.uncertainty.dense import augmented_labels

    names = structures_to_score(case.structures, case.labels)
    conditions = {"clean": case}
    for e in eps:
        a = D.run_attack(model, case, {"name": "pgd", "eps": e, "steps": 5}, {})
        conditions[a.condition] = D.with_image(case, a.perturbed)
    srows, rows = [], []
    for condition, c in conditions.items():
        res = D.segment(model, c, probabilities=True)
        aug = augmented_labels(model, c, n_samples=tta) if tta else []
        risks, r = dense_risk_rows(
            res.labels, res.probabilities, names, model=model.name, condition=condition,
            reference=case.labels, augmented=aug, risk_model=risk_model,
        )  # fmt: skip
        rows += r
        for label, risk in risks.items():
            ref, m = case.labels == label, res.labels == label
            total = int(ref.sum()) + int(m.sum())
            srows.append(
                {
                    "structure": names[label],
                    "twin": (name, label),
                    "condition": condition,
                    "dice": 1.0 if total == 0 else 2.0 * int((ref & m).sum()) / total,
                    "risk": risk.risk,
                    "slices": risk.slices,
                    "stops": risk.stops,
                }
            )
    return srows, rows


def _model():
    from napari_segeval.models.registry import load_dense

    return load_dense("builtin-ct", device="cpu")


def fit(args) -> int:
    from napari_segeval.uncertainty.risk import RiskModel, Signal

    seeds = list(TUNING)[: args.cases or None]
    if args.load:
        srows_all, slice_rows = _from_json(json.loads(Path(args.load).read_text()))
    else:
        model = _model()
        unfitted = RiskModel.load()  # only its signals are read: the fit scores them again
        srows_all, slice_rows = [], []
        for vname, case, _ in volumes("tuning", args.cases):
            t0 = time.perf_counter()
            srows, rows = run_volume(model, vname, case, tta=args.tta, eps=args.eps,
                                     risk_model=unfitted)  # fmt: skip
            srows_all += srows
            slice_rows += rows
            print(f"  {vname}: {len(srows)} structures, {time.perf_counter() - t0:.0f} s")
        if args.save:
            Path(args.save).write_text(json.dumps(_to_json(srows_all, slice_rows)))
    risk_model = fit_risk(
        srows_all,
        slice_rows,
        [Signal.ENTROPY.value, Signal.CONTINUITY.value, Signal.TTA.value],
        STRUCTURE_NAMES,
        {
            "fitted_on": f"CT phantoms (make_ct_case) seeds {seeds[0]}-{seeds[-1]}, clean "
            f"and PGD eps={'/'.join(map(str, args.eps))} (5 steps)",
            "models": ["builtin-ct"],
            "tta": args.tta,
            "command": "python benchmarks/bench_triage_dense.py --part fit"
            + (f" --cases {args.cases}" if args.cases else "")
            + (f" --eps {' '.join(map(str, args.eps))}" if args.eps != EPS else ""),
        },
    )
    out = ROOT.parent / "napari_segeval/uncertainty/risk_model_dense.json"
    out.write_text(json.dumps(risk_model.to_dict(), indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT.parent)}: {json.dumps(risk_model.provenance)}")
    return 0


def measure(args) -> int:
    """Collect (or ``--load``) the records, score them with the shipped dense risk model
    read at the end (a fit running beside a long collection is picked up), report."""
    from napari_segeval.uncertainty.risk import RiskKind, RiskModel

    collected: dict = {}
    if args.load:
        collected = json.loads(Path(args.load).read_text())
    else:
        model = _model()
        for which in args.sets:
            srows, rows = [], []
            for vname, case, _ in volumes(which, args.cases):
                s, r = run_volume(model, vname, case, tta=args.tta, eps=args.eps)
                srows += s
                rows += r
                print(f"  {which} {vname}: {len(s)} structures", flush=True)
            collected[which] = _to_json(srows, rows)
        if args.save:
            Path(args.save).write_text(json.dumps(collected, allow_nan=True))
    risk_model = RiskModel.load(kind=RiskKind.DENSE)
    print(f"dense risk model: {json.dumps(risk_model.provenance)}")
    for which, data in collected.items():
        srows, rows = _from_json(data)
        rescore(srows, rows, risk_model)
        report_conditions(f"builtin-ct {which}", srows, rows)
    return 0


def cost(args) -> int:
    """Segmentation alone against segmentation with the risk (best of ``--repeat``)."""
    from napari_segeval.evaluation.protocols import _dense as D
    from napari_segeval.evaluation.triage import dense_risk_rows
    from napari_segeval.metrics.table import structures_to_score
    from napari_segeval.uncertainty.dense import augmented_labels

    model = _model()
    ((_, case, _),) = volumes("sample", 1)
    names = structures_to_score(case.structures, case.labels)
    best = {"alone": math.inf, "with risk": math.inf}
    for _ in range(args.repeat):
        for what in best:
            t0 = time.perf_counter()
            res = D.segment(model, case, probabilities=what == "with risk")
            if what == "with risk":
                aug = augmented_labels(model, case, n_samples=args.tta) if args.tta else []
                dense_risk_rows(res.labels, res.probabilities, names, model=model.name,
                                augmented=aug)  # fmt: skip
            best[what] = min(best[what], time.perf_counter() - t0)
    print(
        f"builtin-ct, {len(names)} structures, {case.image.shape}: segmentation "
        f"{best['alone']:.2f} s, with the risk ({args.tta} augmented passes) "
        f"{best['with risk']:.2f} s: {best['with risk'] / best['alone']:.2f}x"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("fit", "measure", "cost"), default="measure")
    ap.add_argument("--sets", nargs="+", default=["heldout", "sample"])
    ap.add_argument("--cases", type=int, default=None, help="at most this many volumes per set")
    ap.add_argument("--tta", type=int, default=4, help="augmented passes of the tta signal")
    ap.add_argument("--eps", type=float, nargs="*", default=EPS, help="PGD budgets, normalized")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2, help="cost: best of this many")
    ap.add_argument("--save", help="fit, measure: write the collected records (JSON) here")
    ap.add_argument("--load", help="fit, measure: use the records of --save, run nothing")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    return {"fit": fit, "measure": measure, "cost": cost}[args.part](args)


if __name__ == "__main__":
    raise SystemExit(main())
