"""``segeval evaluate``: run a protocol over a data set (local pool or Dask) into a results folder."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path

from napari_segeval._errors import SegEvalError
from napari_segeval.cli import _common as common
from napari_segeval.cli._progress import progress_bar

#: ``evaluation.protocols.REGISTRY`` and ``evaluation.layouts.LAYOUTS`` (a test keeps them
#: equal), spelled out so that ``segeval --help`` imports no evaluation or metrics code.
PROTOCOL_NAMES = (
    "msd-robust",
    "medsam2-3d",
    "medsam2-video",
    "uncertainty",
    "cv5-2d",
    "interactive",
)
LAYOUT_NAMES = (
    "msd",
    "nnunet",
    "camus",
    "isic",
    "neopolyp",
    "generic",
    "lits",
    "kits23",
    "word",
    "feta",
    "totalsegmentator",
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="run an evaluation protocol over a data set and write results + report",
        description=(
            "Evaluate every case of DATA (an MSD/nnU-Net/CAMUS/ISIC/NeoPolyp/LiTS/KiTS23/"
            "WORD/FeTA/TotalSegmentator folder, or generic paired folders) with a named "
            "protocol. Writes DIR/results.csv (one "
            "row per case x structure x condition: case, structure, condition, dice, ...), "
            "DIR/summary.json and DIR/report.html; each case's predictions (and, for "
            "attacks, perturbed images) with the source geometry in DIR/predictions/ "
            "(open DIR in napari to browse them); per-case records in DIR/cases/ make a "
            "re-run resume where it stopped. Broken cases become error rows; the exit "
            "status is 3 when any case failed. With --json prints the summary object."
        ),
    )
    p.add_argument("data", type=Path, help="data-set folder")
    p.add_argument(
        "--protocol",
        required=True,
        help=f"protocol name ({', '.join(PROTOCOL_NAMES)}) or module:ATTRIBUTE",
    )
    p.add_argument(
        "--output-dir",
        "-o",
        required=True,
        type=Path,
        metavar="DIR",
        help="results folder (created; resumed when it holds the same recipe)",
    )
    p.add_argument("--layout", choices=LAYOUT_NAMES, help="data-set layout (default: detect)")
    p.add_argument("--images", metavar="GLOB", help="generic layout: image glob under DATA")
    p.add_argument(
        "--labels",
        metavar="PATTERN",
        help="generic layout: label path pattern with {stem}, {name}, {parent}",
    )
    p.add_argument(
        "--camus-mode",
        choices=("frames", "sequences", "all"),
        help="CAMUS: ED/ES frames or half sequences",
    )
    p.add_argument(
        "--preset",
        metavar="NAME",
        help="paper preset of the protocol (msd-robust: rog; medsam2-3d/-video: "
        "medsam2; uncertainty: li2026; cv5-2d: borst2026): follows the "
        "published recipe; differences are listed in docs/protocols.md and "
        "the report",
    )
    common.add_modality_option(
        p,
        "modality of the images for protocols with a 'modality' parameter "
        "(medsam2-3d/-video): same as --param modality=...; default: DICOM "
        "tag, dataset.json, guess",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="model to evaluate (medsam2-3d/-video: a promptable model such as "
        "builtin, threshold, medsam2, sam2.1-small; msd-robust: a dense "
        "model); repeat it to compare models on the same prompts and "
        "attacks (one --model is --param model=NAME)",
    )
    p.add_argument(
        "--prompts",
        type=Path,
        default=None,
        metavar="DIR",
        help="medsam2-3d/-video: each case's prompts from DIR/<case>.prompts.json (the "
        "viewer's Save prompts format) instead of boxes from its reference; cases "
        "without reference labels then run too (risks, no scores): same as "
        "--param prompts=DIR",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="protocol parameter (VALUE parsed as JSON when it can be); repeatable",
    )
    p.add_argument(
        "--attack",
        action="append",
        default=[],
        metavar="NAME[:K=V,...]",
        help="attack condition of msd-robust and interactive, e.g. "
        "pgd:eps=0.05,steps=5 (eps in normalized units); repeatable",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="local worker processes (default: one per GPU, else one per core)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="Dask scheduler address (tcp://HOST:PORT): run the cases there",
    )
    common.add_flag(p, "--restart", "discard finished case records in DIR instead of resuming")
    common.add_flag(p, "--no-report", "skip report.html")
    common.add_flag(
        p,
        "--no-save-predictions",
        "do not save each case's label maps, perturbed images and "
        "perturbations under DIR/predictions/ (saved by default, with the "
        "source geometry, for the napari results browser)",
    )
    common.add_flag(p, "--no-progress", "no progress bar on stderr (drawn only on a terminal)")
    common.add_precision_option(p, default=None)
    common.add_json_flag(p)
    p.set_defaults(func=run)


def _assignments(items: Iterable[str], error: str) -> dict:
    """``K=V`` items as a dict, each VALUE parsed as JSON when it can be; ``error`` is the
    message (``{item!r}``) of an item without a key or an ``=``."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SegEvalError(error.format(item=item))
        try:
            out[key.strip()] = json.loads(value.strip())
        except ValueError:
            out[key.strip()] = value.strip()
    return out


def parse_params(items: list[str]) -> dict:
    """``["jitter=5", "model=builtin"]`` -> ``{"jitter": 5, "model": "builtin"}`` (JSON values)."""
    return _assignments(items, "--param needs KEY=VALUE, got {item!r}")


def parse_attack(text: str) -> dict:
    """``"pgd:eps=0.03,steps=5"`` -> ``{"name": "pgd", "eps": 0.03, "steps": 5}`` (NAME may be
    ``module:function``)."""
    name, _, rest = text.rpartition(":") if "=" in text else (text, "", "")
    if "=" in name:
        raise SegEvalError(f"--attack needs NAME[:K=V,...], got {text!r}")
    options = filter(None, (s.strip() for s in rest.split(",")))
    return {"name": name.strip(), **_assignments(options, "--attack option {item!r} needs K=V")}


def apply_models(overrides: dict, models: list[str]) -> dict:
    """``--model`` options into the parameter overrides: one is ``model``, several ``models``."""
    if not models:
        return overrides
    given = overrides.get("model")
    if "models" in overrides or (given is not None and [str(given)] != list(models)):
        shown = f"model={given}" if "models" not in overrides else "models=..."
        raise SegEvalError(
            f"--param {shown} and --model {' --model '.join(models)} disagree: "
            "name each model with --model"
        )
    key, value = ("model", models[0]) if len(models) == 1 else ("models", list(models))
    return {**overrides, key: value}


def _headline_lines(res: dict) -> list[str]:
    """The protocol's headline numbers, when its summary has them (cv5-2d, msd-robust)."""
    out = []
    head = res.get("headline")
    if isinstance(head, dict) and "names" in head:
        parts = [
            f"{head['names'][m]} {res[m]['average']['mean']:.2f} +- {res[m]['average']['std']:.2f}"
            for m in ("dice", "iou", "recall", "precision")
            if m in res
        ]
        out.append(
            f"headline ({head.get('reading')}, %, mean +- std over folds): " + ", ".join(parts)
        )
    acc = res.get("robust_accuracy")
    if acc:
        out.append(
            "robust accuracy (ROG: mean attacked Dice): "
            + ", ".join(f"{c} {float(v):.4f}" for c, v in acc.items())
        )
    return out


def _summary_text(result) -> str:
    from napari_segeval.metrics import METRICS, ResultsTable, summarize

    s = result.summary
    out = Path(result.output_dir)
    preset = f" (preset {s['preset']})" if s.get("preset") else ""
    lines = [
        f"{s['protocol']} {s['protocol_version']}{preset}: {s['n_cases']} cases, {s['n_ok']} ok, "
        f"{s['n_failed']} failed, {s['n_missing']} not run ({result.n_skipped} resumed)"
    ]
    rows = [r for r in ResultsTable.from_csv(out / "results.csv") if r.get("status") == "ok"]
    models = (s.get("params") or {}).get("models") or [None]
    results = s.get("results") or {}
    for model in models:
        mine = [r for r in rows if model is None or r.get("model") == model]
        if not mine:
            continue
        if model is not None:
            lines.append(f"model {model}:")
        own = (results.get("by_model") or {}).get(model, {}) if model is not None else results
        if s["protocol"] == "interactive" and own.get("conditions"):
            lines.append(rounds_text(own))
            continue
        if not any("dice" in r for r in mine):  # no reference: nothing scored
            risky = max(mine, key=lambda r: float(r.get("risk", float("-inf"))))
            lines.append(
                f"no reference labels: {len(mine)} structures, none scored; riskiest "
                f"{risky['case']} {risky['structure']} (risk {METRICS['risk'].text(risky.get('risk'))}); "
                f"the worklist: segeval triage {out}"
            )
            continue
        stats = summarize(mine, "dice", by=("structure", "condition"))
        lines.append(
            common.format_table(
                ["structure", "condition", "n", "mean dice", "median", "iqr"],
                [
                    [t["structure"], t["condition"], t["n"], t["mean"], t["median"], t["iqr"]]
                    for t in stats
                ],
            )
        )
    lines += _headline_lines(s.get("results") or {})
    lines += [f"failed: {f['case']}: {f['error']}" for f in s["failed"][:20]]
    if len(s["failed"]) > 20:
        lines.append(f"... and {len(s['failed']) - 20} more failures (see summary.json)")
    unsaved = s.get("files_not_saved") or []
    if unsaved:
        lines.append(
            f"warning: prediction files of {len(unsaved)} case(s) not saved (scores "
            f"kept): {unsaved[0]['case']}: {unsaved[0]['error']}"
        )
    written = [out / name for name in ("results.csv", "summary.json", "report.html")]
    lines.append("wrote " + ", ".join(str(w) for w in written if w.is_file()))
    return "\n".join(lines)


def rounds_text(results: dict) -> str:
    """The ``interactive`` summary as two tables: Dice per round, then the curve numbers."""
    target = float(results["target_dice"])  # interactive_curves writes it
    conds = results["conditions"]
    from napari_segeval.evaluation._report_sections import rounds_rows

    per_round, curve = rounds_rows(conds)
    per_round_text = common.format_table(
        ["condition", "round", "n", "median dice", "q1", "q3"], per_round
    )
    curve_text = common.format_table(
        ["condition", "structures", "auc", "noi mean", "noi median", f"reach {target:g}", "falls"],
        curve,
    )
    return per_round_text + "\n" + curve_text


def run(args: argparse.Namespace) -> int:
    """Run the evaluation and print its summary; exit 3 when some cases failed."""
    from napari_segeval.evaluation import run_evaluation

    overrides = apply_models(parse_params(args.param), args.model)
    if args.modality:
        overrides.setdefault("modality", args.modality)
    if args.prompts is not None:
        overrides["prompts"] = str(args.prompts.resolve())
    if args.precision is not None:  # promptable protocols: same as --param precision=...
        overrides["precision"] = args.precision.value
    if args.attack:
        overrides["attacks"] = [parse_attack(a) for a in args.attack]
    if args.workers is not None and args.workers < 1:
        raise SegEvalError(f"--workers must be at least 1, got {args.workers}")
    given = {k: getattr(args, k) for k in ("images", "labels", "camus_mode")}
    options = {k: v for k, v in given.items() if v is not None}
    with progress_bar("cases", "case", enabled=not (args.no_progress or args.json)) as progress:
        result = run_evaluation(
            args.data,
            args.protocol,
            args.output_dir,
            params=overrides,
            preset=args.preset,
            layout=args.layout,
            layout_options=options,
            workers=args.workers,
            scheduler=args.scheduler,
            resume=not args.restart,
            progress=progress,
            report=not args.no_report,
            save_predictions=not args.no_save_predictions,
        )
    return common.emit(
        args,
        {**result.summary, "output_dir": str(result.output_dir), "n_resumed": result.n_skipped},
        _summary_text(result),
        result.exit_code,
    )
