"""``segeval metrics``: per-structure overlap and surface metrics of two label maps."""

from __future__ import annotations

import argparse
from pathlib import Path

from napari_segeval._errors import GeometryMismatchError, SegEvalError
from napari_segeval.cli import _common as common


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metrics",
        help="per-structure Dice, IoU, precision, recall, HD95, ASSD, NSD of two label maps",
        description=(
            "Compare PREDICTION with REFERENCE structure by structure. Dice is "
            "2|A∩B|/(|A|+|B|); distances in mm using the files' spacing; NSD is the "
            "surface Dice at --tolerance mm. Both maps must share one grid. Any label "
            "format the reader takes: NIfTI, MHA, ..., 2D PNG masks (0/255 masks read "
            "as 0/1; colour-coded masks through --color-table or a dataset.json). "
            'With --json prints {"structures": [{"label", "name", "dice", "iou", '
            '"precision", "recall", "hd", "hd95", "assd", "nsd", "volume_ref_ml", '
            '"volume_pred_ml"}, ...]}; NaN is written as null and infinity as "inf".'
        ),
    )
    p.add_argument("reference", type=Path, help="reference label map")
    p.add_argument("prediction", type=Path, help="predicted label map")
    p.add_argument("--tolerance", type=float, default=2.0, metavar="MM", help=common.TOLERANCE_HELP)
    p.add_argument(
        "--empty",
        choices=("one", "nan", "zero"),
        default="one",
        help="Dice when a structure is empty in both maps (default one)",
    )
    common.add_flag(p, "--no-surface", "skip HD95, ASSD and NSD")
    common.add_reader_options(p, series=False)
    p.set_defaults(func=run)


def rows_table(rows: list[dict]) -> str:
    """Structure rows as a text table of every ``ROW_KEYS`` key but ``hd``."""
    from napari_segeval.metrics import METRICS, ROW_KEYS

    keys = [k for k in ROW_KEYS if k != "hd"]
    headers = [METRICS[k].text_header if k in METRICS else k for k in keys]
    return common.format_table(headers, [[r.get(k) for k in keys] for r in rows])


def reference_rows(case, prediction, structures: dict[int, str], **options) -> list[dict]:
    """:data:`~napari_segeval.metrics.ROW_KEYS` rows of ``prediction`` against the case's
    reference labels (none without them); ``options`` go to ``structure_table``."""
    if case.labels is None:
        return []
    from napari_segeval.metrics import ROW_KEYS, structure_table

    rows = structure_table(case.labels, prediction, case.spacing, structures=structures, **options)
    return [{k: r.get(k) for k in ROW_KEYS} for r in rows]


def read_pair(
    reference: Path, prediction: Path, color_table: dict | None = None, volume: int | None = None
):
    """Read two label maps on one grid: ``(reference, prediction, geometry, names)``."""
    from napari_segeval.io import read_labels

    ref, ref_geom, names = read_labels(reference, default_color_table=color_table, volume=volume)
    pred, pred_geom, pred_names = read_labels(
        prediction, default_color_table=color_table, volume=volume
    )
    if ref.ndim == 4 or pred.ndim == 4:
        raise SegEvalError(
            f"{reference if ref.ndim == 4 else prediction} is a time series of "
            "label maps (t, z, y, x): choose one volume with --volume T"
        )
    common.check_label_ids(reference, ref)
    common.check_label_ids(prediction, pred)
    if ref.shape != pred.shape or not ref_geom.matches(pred_geom):
        raise GeometryMismatchError(
            f"{reference} (shape {ref.shape}, {ref_geom.describe()}) and {prediction} "
            f"(shape {pred.shape}, {pred_geom.describe()}) are not on the same grid"
        )
    return ref, pred, ref_geom, {**pred_names, **names}


def run(args: argparse.Namespace) -> int:
    """Compute and print the per-structure metrics."""
    from napari_segeval.metrics import structure_table, structures_to_score

    common.check_tolerance(args)
    ref, pred, geometry, names = read_pair(
        args.reference, args.prediction, common.color_table(args), args.volume
    )
    rows = structure_table(
        ref,
        pred,
        geometry.spacing,
        structures=structures_to_score(names, ref, pred),
        tolerance_mm=args.tolerance,
        empty=args.empty,
        surface=not args.no_surface,
    )
    return common.emit(args, {"structures": rows}, rows_table(rows))
