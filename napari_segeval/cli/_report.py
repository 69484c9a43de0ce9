"""``segeval report``: rebuild results.csv, summary.json and report.html of a results folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from napari_segeval._errors import ReadError
from napari_segeval.cli._common import add_json_flag, emit


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="rebuild the report of a results folder written by 'segeval evaluate'",
        description=(
            "Read RESULTS_DIR/cases/*.json (also of an interrupted run) and rewrite "
            "results.csv, summary.json and report.html. With --json prints "
            '{"report": PATH, "n_cases", "n_ok", "n_failed", "n_missing"}.'
        ),
    )
    p.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    p.add_argument(
        "--worst",
        type=int,
        default=4,
        metavar="N",
        help="thumbnails of the N worst cases (default 4)",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Rebuild the outputs and print where the report is."""
    from napari_segeval.evaluation import finalize
    from napari_segeval.evaluation.report import write_report

    out = args.results_dir
    if not (out / "run.json").is_file() or not (out / "cases.json").is_file():
        raise ReadError(
            f"{out}: not a results folder of 'segeval evaluate' (run.json / cases.json missing)"
        )
    result = finalize(out, report=False)
    path = write_report(out, worst=max(0, args.worst))
    s = result.summary
    payload = {
        "report": str(path),
        **{k: s[k] for k in ("n_cases", "n_ok", "n_failed", "n_missing")},
    }
    return emit(
        args,
        payload,
        f"{path}: {s['n_cases']} cases, {s['n_ok']} ok, {s['n_failed']} "
        f"failed, {s['n_missing']} not run",
    )
