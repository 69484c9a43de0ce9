"""``segeval uncertainty``: ``score`` (Li et al.'s, CVPR 2026, Aleatoric Uncertainty Value of
a data set's training cases) and ``filter`` (training lists without the most uncertain)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from napari_segeval._errors import ReadError, SegEvalError
from napari_segeval.cli import _common as common
from napari_segeval.cli._evaluate import LAYOUT_NAMES
from napari_segeval.cli._progress import progress_bar

SPLITS = ("train", "all", "val", "test")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "uncertainty",
        help="AUV of a data set's training cases (Li et al. 2026) and filtered training lists",
        description=(
            "score: the Aleatoric Uncertainty Value of every labelled training case "
            "(normalized entropy of the singular-value energy of each class's decoded map "
            "from a frozen promptable model, summed over classes, log-min-max normalized "
            "over the cases; 1 = most uncertain). filter: nnU-Net splits_final.json and "
            "dataset.json without the most uncertain training cases."
        ),
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    s = actions.add_parser(
        "score",
        help="AUV per case and per class of a data set's training cases",
        description=(
            "Prompt every class of every case with the box of its reference mask (middle "
            "slice of its extent), propagate through the whole volume with a frozen "
            "promptable model, and score the decoded map of each class. Prints a table "
            "(most uncertain first); --output FILE writes FILE as JSON or CSV (by its "
            "suffix) and the other format beside it. Cases that cannot be read keep no "
            "score and make the exit status 3."
        ),
    )
    s.add_argument("dataset", type=Path, metavar="DATASET", help="data-set folder")
    common.add_model_option(
        s,
        ["promptable"],
        "auto",
        extra=("auto",),
        what="promptable model (auto: medsam2 with --checkpoint, else builtin)",
    )
    s.add_argument("--checkpoint", metavar="FILE", help="MedSAM2 checkpoint (MedSAM2_latest.pt)")
    layouts = [n for n in LAYOUT_NAMES if n != "generic"]  # a generic layout has no splits
    s.add_argument("--layout", choices=layouts, help="data-set layout (default: detect)")
    s.add_argument(
        "--split",
        choices=SPLITS,
        default="train",
        help="which labelled cases to score (default: train, as the paper)",
    )
    s.add_argument(
        "--matrix",
        choices=("D_HW", "H_DW", "W_DH"),
        default="D_HW",
        help="rows of the class matrix of a 3D map (default D_HW: one row per slice)",
    )
    s.add_argument(
        "--energy-power",
        type=float,
        default=2.0,
        metavar="P",
        help="energy = singular value ** P (2: the paper; 1: its released code)",
    )
    s.add_argument(
        "--aggregate",
        choices=("sum", "mean"),
        default="sum",
        help="sample scale over classes (sum: the paper)",
    )
    common.add_device_option(s)
    s.add_argument("--threads", type=int, metavar="N", help="torch CPU threads while scoring")
    s.add_argument(
        "--output",
        "-o",
        type=Path,
        metavar="FILE",
        help="scores file: .json or .csv (the other format is written beside it)",
    )
    common.add_flag(s, "--overwrite", "replace existing score files")
    common.add_flag(s, "--no-progress", "no progress bar on stderr")
    common.add_json_flag(s)
    s.set_defaults(func=run_score)
    f = actions.add_parser(
        "filter",
        help="splits_final.json / dataset.json without the most uncertain cases",
        description=(
            "Rank the cases of SCORES by AUV and remove the most uncertain fraction: from "
            "every fold's train list of nnU-Net's splits_final.json (--splits FILE, else "
            "DATASET/splits_final.json, else five folds made as nnU-Net makes them) and "
            "from DATASET/dataset.json. Writes DIR/splits_final.json, DIR/dataset.json "
            "and DIR/removed.json."
        ),
    )
    f.add_argument("scores", type=Path, metavar="SCORES", help="file of 'uncertainty score'")
    f.add_argument(
        "--remove",
        type=float,
        required=True,
        metavar="F",
        help="fraction of the most uncertain cases to remove (0.05, 0.1 ...)",
    )
    f.add_argument(
        "--rule",
        choices=("quantile", "round"),
        default="quantile",
        help="quantile: keep AUV at or below the (1-F) quantile (the paper); "
        "round: remove floor(F*n + 0.5) cases",
    )
    f.add_argument(
        "--dataset",
        type=Path,
        metavar="DATASET",
        help="data-set folder whose dataset.json / splits_final.json to filter",
    )
    f.add_argument("--splits", type=Path, metavar="FILE", help="nnU-Net splits_final.json")
    f.add_argument("--output", "-o", type=Path, required=True, metavar="DIR")
    common.add_flag(f, "--overwrite", "replace existing files in DIR")
    common.add_json_flag(f)
    f.set_defaults(func=run_filter)
    p.set_defaults(func=lambda _args: p.print_help() or 2)  # no action: the help, status 2


def _targets(path: Path, overwrite: bool) -> list[Path]:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".csv"):
        raise SegEvalError(f"{path}: the scores file must end in .json or .csv")
    targets = [path, path.with_suffix(".csv" if suffix == ".json" else ".json")]
    common.refuse_existing(targets, overwrite)
    return targets


def _score_table(record: dict) -> str:
    rows = sorted(
        record["cases"], key=lambda c: (-(c["auv"] if _finite(c["auv"]) else math.inf), c["case"])
    )
    body = []
    for c in rows:
        scored = [r for r in c["classes"] if _finite(r.get("scale"))]
        low = min(scored, key=lambda r: r["scale"])["name"] if scored else "-"
        split, error = c.get("split") or "-", c.get("error") or ""
        body.append([c["case"], split, c["scale"], c["auv"], len(scored), low, error])
    m = record["model"]
    headers = ["case", "split", "scale S", "AUV", "classes", "lowest-scale class", "error"]
    return (
        f"AUV of {len(rows)} cases (model {m['name']}, {m['feature']}; {m['note']}; "
        f"matrix {record['layout']}, energy power {record['energy_power']:g}, "
        f"{record['aggregate']} over classes)\n" + common.format_table(headers, body)
    )


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def run_score(args: argparse.Namespace) -> int:
    """Score the cases, print the table (or JSON), write the files; 3 when a case failed."""
    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.evaluation.protocols.auv_scores import score_cases, write_scores

    targets = _targets(args.output, args.overwrite) if args.output else []
    if args.threads is not None and args.threads < 1:
        raise SegEvalError(f"--threads must be at least 1, got {args.threads}")
    if not 0 < args.energy_power < float("inf"):
        raise SegEvalError(f"--energy-power must be a positive number, got {args.energy_power:g}")
    specs = load_layout(args.dataset, args.layout)
    chosen = [
        s for s in specs if (s.labels or s.error) and (args.split == "all" or s.split == args.split)
    ]
    if not chosen:
        raise SegEvalError(
            f"{args.dataset}: no labelled case in split {args.split!r} "
            f"(splits present: {', '.join(sorted({s.split for s in specs}))})"
        )
    with progress_bar("AUV", "case", enabled=not (args.no_progress or args.json)) as progress:
        record = score_cases(
            chosen,
            model=args.model,
            checkpoint=args.checkpoint,
            device=args.device,
            layout=args.matrix,
            power=args.energy_power,
            aggregate=args.aggregate,
            threads=args.threads,
            progress=progress,
        )
    record["data"] = str(Path(args.dataset).absolute())
    written = [str(write_scores(t, record, overwrite=args.overwrite)) for t in targets]
    failed = [c for c in record["cases"] if c.get("error")]
    text = _score_table(record) + ("\nwrote " + ", ".join(written) if written else "")
    return common.emit(args, {**record, "written": written}, text, 3 if failed else 0)


def _train_ids(args: argparse.Namespace, record: dict) -> list[str]:
    if args.dataset is not None:
        from napari_segeval.evaluation.layouts import load_layout

        return [s.case_id for s in load_layout(args.dataset) if s.split == "train"]
    return [c["case"] for c in record["cases"]]


def run_filter(args: argparse.Namespace) -> int:
    """Write the filtered training lists and print what was removed."""
    from napari_segeval._atomic import atomic_write_text
    from napari_segeval._json import json_safe
    from napari_segeval.evaluation.protocols.auv_scores import (
        auv_of,
        read_scores,
        write_filtered_lists,
    )
    from napari_segeval.io import load_dataset_json
    from napari_segeval.io._dataset_json import read_json
    from napari_segeval.uncertainty import filter_most_uncertain

    if not 0.0 <= args.remove <= 1.0:
        raise SegEvalError(f"--remove must be a fraction in [0, 1], got {args.remove}")
    if args.dataset is not None and not args.dataset.is_dir():
        raise ReadError(f"{args.dataset}: data-set folder not found")
    record = read_scores(args.scores)
    scores = auv_of(record)
    if not scores:
        raise SegEvalError(f"{args.scores}: no cases")
    kept, removed = filter_most_uncertain(scores, args.remove, args.rule)
    splits_file = args.splits or (args.dataset / "splits_final.json" if args.dataset else None)
    splits = (
        read_json(splits_file, "splits file") if splits_file and splits_file.is_file() else None
    )
    if args.splits and splits is None:
        raise ReadError(f"{args.splits}: no such splits file")
    if splits is not None and not (
        isinstance(splits, list) and all(isinstance(f, dict) for f in splits)
    ):
        raise ReadError(f"{splits_file}: not an nnU-Net splits_final.json (a list of folds)")
    ds_file = args.dataset / "dataset.json" if args.dataset else None
    dataset = load_dataset_json(ds_file) if ds_file and ds_file.is_file() else None
    out = args.output
    names = ["splits_final.json", "removed.json"] + (["dataset.json"] if dataset else [])
    common.refuse_existing([out / name for name in names], args.overwrite)
    try:
        written = write_filtered_lists(
            out,
            removed,
            train_ids=_train_ids(args, record),
            splits=splits,
            dataset=dataset,
            overwrite=args.overwrite,
        )
    except ValueError as exc:
        raise SegEvalError(f"cannot make nnU-Net folds: {exc}") from None
    summary = {
        "scores": str(args.scores),
        "fraction": args.remove,
        "rule": args.rule,
        "n_cases": len(scores),
        "n_removed": len(removed),
        "n_kept": len(kept),
        "removed": [{"case": c, "auv": scores[c]} for c in removed],
        **written,
    }
    removed_text = json.dumps(json_safe(summary), indent=1)
    written["removed.json"] = summary["removed.json"] = str(
        atomic_write_text(out / "removed.json", removed_text, overwrite=True)
    )
    text = (
        f"removed {len(removed)} of {len(scores)} cases ({args.rule} rule, "
        f"fraction {args.remove:g})\n"
        + common.format_table(["case", "AUV"], [[c, scores[c]] for c in removed])
        + "\nwrote "
        + ", ".join(v for k, v in written.items() if k.endswith(".json"))
    )
    return common.emit(args, summary, text)
