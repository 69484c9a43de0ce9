"""The ``segeval`` command line.

Each subcommand module has ``add_parser(subparsers)`` and ``run(args) -> int``.
A :class:`~napari_segeval.SegEvalError` is one line and exit status 2 (``--debug``: the
traceback); a reader that closes the pipe early ends the command quietly (141).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from napari_segeval import __version__
from napari_segeval._errors import SegEvalError

#: Subcommand modules, imported lazily so ``segeval --help`` stays fast.
SUBCOMMANDS: tuple[str, ...] = (
    "info",
    "inspect",
    "metrics",
    "propagate",
    "segment",
    "attack",
    "evaluate",
    "report",
    "triage",
    "uncertainty",
    "demo",
    "models",
    "samples",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="segeval",
        description=(
            "Inspect and benchmark medical image segmentation, clean and under adversarial attack."
        ),
    )
    parser.add_argument("--version", action="version", version=f"napari-segeval {__version__}")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"napari_segeval.cli._{name}")
        module.add_parser(sub)
    _debug_everywhere(sub)
    return parser


def _debug_everywhere(sub: argparse._SubParsersAction) -> None:
    """Let ``--debug`` also follow the subcommand (``segeval inspect X --debug``)."""
    for child in sub.choices.values():
        child.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
        for action in child._actions:
            if isinstance(action, argparse._SubParsersAction):
                _debug_everywhere(action)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``segeval`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except SegEvalError as exc:
        if args.debug:
            raise
        print(f"segeval {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"segeval {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away: later writes go to os.devnull; SIGPIPE's 141
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a file descriptor (captured in tests)
            pass
        return 141
    except Exception as exc:
        if args.debug:
            raise
        print(
            f"segeval {args.command}: internal error: {type(exc).__name__}: {exc} "
            "(run with --debug for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
