"""``segeval triage``: the worklist of a results folder, riskiest structure first."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from napari_segeval._errors import SegEvalError
from napari_segeval.cli._common import add_json_flag, emit, format_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "triage",
        help="the structures of a results folder ordered by their risk of failure",
        description=(
            "Read RESULTS_DIR (written by 'segeval evaluate') and list its structures, "
            "riskiest first: case, structure, model, condition, the estimated risk of "
            "failure (from the model's own signals, no reference needed), the Dice where "
            "the run had a reference, and the flagged slices with why. With --json prints "
            '{"results_dir", "n_items", "worklist": [{"case", "structure", "model", '
            '"condition", "risk", "dice", "flagged": [{"slice", "risk", "why"}]}]}.'
        ),
    )
    p.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    p.add_argument(
        "--top", type=int, default=None, metavar="K", help="only the K riskiest structures"
    )
    p.add_argument(
        "--slices",
        type=int,
        default=3,
        metavar="N",
        help="flagged slices shown per structure in the table (default 3; --json lists all)",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def _why(item, n: int) -> str:
    parts = [f"{f.slice}: {', '.join(x.value for x in f.flags)}" for f in item.flagged[:n]]
    more = len(item.flagged) - n
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def run(args: argparse.Namespace) -> int:
    """Print the worklist."""
    from napari_segeval.evaluation.triage import worklist

    if args.top is not None and args.top < 1:
        raise SegEvalError(f"--top must be at least 1, got {args.top}")
    items = worklist(args.results_dir)
    shown = items[: args.top] if args.top else items
    payload = {
        "results_dir": str(args.results_dir),
        "n_items": len(items),
        "worklist": [w.to_dict() for w in shown],
    }
    rows = [
        (
            w.case,
            w.structure,
            w.model,
            w.condition,
            w.risk,
            "-" if math.isnan(w.dice) else w.dice,
            _why(w, max(0, args.slices)) or "-",
        )
        for w in shown
    ]
    headers = ("case", "structure", "model", "condition", "risk", "dice", "flagged slices")
    text = format_table(headers, rows, digits=3) if rows else "no structure with a risk"
    return emit(args, payload, text)
