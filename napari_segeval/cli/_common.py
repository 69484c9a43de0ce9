"""Output helpers shared by every subcommand: tables, JSON, common options."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidLabelsError, SegEvalError, WriteError
from napari_segeval._json import json_safe

JSON_HELP = (
    "print exactly one JSON object instead of the table "
    '(NaN is written as null, infinity as the string "inf")'
)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Add the standard ``--json`` flag."""
    parser.add_argument("--json", action="store_true", help=JSON_HELP)


def dumps(payload: dict) -> str:
    """Serialize ``payload`` as one JSON object (strict: no NaN tokens)."""
    return json.dumps(json_safe(payload), allow_nan=False, indent=None)


def fmt(value: Any, digits: int = 4) -> str:
    """Format one table cell: floats to ``digits`` decimals (``inf``, ``-inf``), NaN as ``-``."""
    if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, (float, np.floating)) else str(value)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], digits: int = 4) -> str:
    """Render rows as a plain aligned text table."""
    cells = [[fmt(c, digits) for c in row] for row in rows]
    widths = [max(map(len, column)) for column in zip(headers, *cells)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)
    return "\n".join(lines)


def emit(args: argparse.Namespace, payload: dict, text: str, code: int = 0) -> int:
    """Print ``payload`` as JSON with ``--json``, else ``text``; return ``code`` (exit status)."""
    print(dumps(payload) if getattr(args, "json", False) else text)
    return code


COLOR_TABLE_HELP = (
    'JSON colours of a colour-coded mask: {"1": [255, 0, 0], "2": [0, 255, 0]} '
    "(label id: [R, G, B] 0-255, or one grey value; black is background), or a "
    'dataset.json holding that object under "color_table" (names from its "labels"). '
    'Default: the "color_table" of the dataset.json beside the mask. Grey masks are '
    "read as they are"
)


def color_table(args: argparse.Namespace) -> dict | None:
    """The reader's colour table from ``--color-table`` (None when not given)."""
    path = getattr(args, "color_table", None)
    if path is None:
        return None
    from napari_segeval.io import load_color_table

    return load_color_table(path)


DEVICE_HELP = "torch device: auto (default: CUDA, then MPS, then CPU), cpu, cuda or mps"
MODALITY_HELP = (
    "modality of IMAGE for the intensity mapping (default: the DICOM tag, then "
    "dataset.json, then a guess from the pixels)"
)


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--device``: the same choices and default in every subcommand."""
    from napari_segeval.models._device import DEVICE_CHOICES

    parser.add_argument("--device", default="auto", choices=DEVICE_CHOICES, help=DEVICE_HELP)


PRECISION_HELP = (
    "arithmetic of the model: auto (default: the fastest this machine runs that keeps "
    "the model's masks; says which), fp32, or bf16 where the model offers it (LiteMedSAM: "
    "faster, masks not kept exactly), or openvino (LiteMedSAM's encoder in fp32 on "
    "OpenVINO, the openvino extra: faster, same masks)"
)


def add_precision_option(parser: argparse.ArgumentParser, default: Any = "auto") -> None:
    """Add ``--precision`` (:class:`~napari_segeval.models.precision.Precision`)."""
    from napari_segeval.models.precision import Precision

    parser.add_argument(
        "--precision",
        type=Precision,
        choices=list(Precision),
        default=None if default is None else Precision(default),
        help=PRECISION_HELP,
    )


def add_modality_option(parser: argparse.ArgumentParser, text: str = MODALITY_HELP) -> None:
    """Add ``--modality`` (one of :data:`napari_segeval.io.case.MODALITIES`; default: guessed)."""
    from napari_segeval.io.case import MODALITIES

    parser.add_argument("--modality", choices=MODALITIES, default=None, help=text)


def _model_help(kinds: Sequence[str], extra: Sequence[str] = ()) -> str:
    from napari_segeval.models.registry import FORMS, model_names

    parts = list(extra)
    for kind in kinds:
        parts += [*model_names(kind), *FORMS[kind]]
    return ", ".join(dict.fromkeys(parts))


def add_model_option(
    parser: argparse.ArgumentParser,
    kinds: Sequence[str],
    default: str,
    extra: Sequence[str] = (),
    flags: Sequence[str] = ("--model",),
    what: str = "model",
) -> None:
    """Add ``--model``: the registry's names of ``kinds`` and their reference forms, ``extra``
    values (``auto``) and ``what`` in the help. Without ``"dense"`` in ``kinds`` anything else
    is refused when the arguments are parsed; dense paths are checked when loaded."""
    from napari_segeval.models.registry import DENSE, is_reference, split_ref

    def model_ref(text: str) -> str:
        if text in extra or any(is_reference(text, kind) for kind in kinds):
            return text
        if "dense" not in kinds and (split_ref(text)[0] in DENSE or Path(text).exists()):
            raise argparse.ArgumentTypeError(
                f"{text!r} is a dense model or a file: a dense model segments without prompts "
                f"(use segeval segment IMAGE --model {text}); promptable weights go with "
                "--checkpoint"
            )
        raise argparse.ArgumentTypeError(
            f"unknown model {text!r} (use one of {_model_help(kinds, extra)})"
        )

    parser.add_argument(
        *flags,
        dest="model",
        type=model_ref,
        default=default,
        metavar="MODEL",
        help=f"{what}: {_model_help(kinds, extra)} (default {default}; "
        "segeval info describes them)",
    )


def add_input_options(parser: argparse.ArgumentParser, series: bool = True) -> None:
    """Add ``--series UID`` (DICOM folders) and ``--volume T`` (4D time series)."""
    if series:
        parser.add_argument(
            "--series",
            metavar="UID",
            help="DICOM folder: the series to read (UID or UID#k as listed by "
            "'segeval inspect'; default the largest)",
        )
    parser.add_argument(
        "--volume",
        type=int,
        metavar="T",
        help="4D time series (t, z, y, x): the volume to use, from 0",
    )


def add_flag(parser: argparse.ArgumentParser, name: str, text: str) -> None:
    """Add an on/off option (``store_true``)."""
    parser.add_argument(name, action="store_true", help=text)


def add_structure_option(parser: argparse.ArgumentParser, what: str, default: str) -> None:
    """Add ``--structure NAME|ID`` (repeatable; what :func:`~napari_segeval.io.resolve_structure` takes)."""
    text = "id, name, or 'label N' as segeval inspect prints it (repeatable; default"
    parser.add_argument(
        "--structure",
        action="append",
        default=[],
        metavar="NAME|ID",
        help=f"{what}: {text}{default})",
    )


def wanted_structures(args: argparse.Namespace, case: Any) -> list[int]:
    """The label ids of ``--structure`` (checked against ``case.labels`` when read)."""
    from napari_segeval.io import resolve_structure

    present = None if case.labels is None else np.unique(case.labels)
    return [
        resolve_structure(s, case.structures, present, source=args.labels) for s in args.structure
    ]


def add_reader_options(parser: argparse.ArgumentParser, series: bool = True) -> None:
    """Add ``--color-table``, ``--series``/``--volume`` and ``--json``, in that order."""
    parser.add_argument("--color-table", type=Path, metavar="FILE", help=COLOR_TABLE_HELP)
    add_input_options(parser, series)
    add_json_flag(parser)


def refuse_existing(paths: Iterable[Path], overwrite: bool) -> None:
    """Raise :class:`~napari_segeval._errors.WriteError` for an existing path unless ``overwrite``."""
    for path in paths:
        if path.exists() and not overwrite:
            raise WriteError(f"{path} exists; pass --overwrite to replace it")


def check_window(args: argparse.Namespace) -> None:
    """Refuse ``--overlap`` outside [0, 1) and ``--batch-size`` below 1 (dense windows)."""
    if not 0 <= args.overlap < 1:
        raise SegEvalError(f"--overlap must be in [0, 1), got {args.overlap}")
    if args.batch_size < 1:
        raise SegEvalError(f"--batch-size must be >= 1, got {args.batch_size}")


def check_tolerance(args: argparse.Namespace) -> None:
    """Refuse a ``--tolerance`` (NSD, mm) that is not positive."""
    if not args.tolerance > 0:
        raise SegEvalError(f"--tolerance must be a positive number of mm, got {args.tolerance}")


TOLERANCE_HELP = "NSD tolerance in mm (default 2)"


def check_label_ids(path: Any, labels: np.ndarray) -> None:
    """Refuse a label map whose largest id the metrics cannot count (one line naming ``path``)."""
    from napari_segeval.metrics.overlap import MAX_LABELS

    top = int(labels.max(initial=0))
    if top >= MAX_LABELS:
        raise InvalidLabelsError(
            f"{path}: label id {top} is above the largest id the metrics take ({MAX_LABELS - 1})"
        )


def read_input(args: argparse.Namespace, image: Any, labels: Any = None):
    """:func:`~napari_segeval.io.read_case` with the input options; refuses a 4D time series
    without ``--volume`` and label ids the metrics cannot count."""
    from napari_segeval.io import read_case

    case = read_case(
        image, labels, default_color_table=color_table(args), series=args.series, volume=args.volume
    )
    if case.labels is not None:
        check_label_ids(labels, case.labels)
    if case.is_time_series:
        n = case.image.shape[0]
        raise SegEvalError(
            f"{image} is a time series of {n} volumes (t, z, y, x): choose one "
            f"with --volume T (0..{n - 1})"
        )
    return case
