"""``segeval propagate``: box-prompted propagation through a volume or a video."""

from __future__ import annotations

import argparse
from pathlib import Path

from napari_segeval.cli._common import (
    add_color_table_option,
    add_device_option,
    add_input_options,
    add_json_flag,
    add_modality_option,
    add_model_option,
    emit,
    read_input,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``segeval propagate``."""
    p = sub.add_parser(
        "propagate",
        help="segment structures from box prompts by slice/frame propagation",
        description=(
            "Segment IMAGE from box prompts with a promptable model (MedSAM2 recipe). "
            "Volumes: the box is on a key slice and the mask is propagated forward to "
            "the last slice and backward to the first, merged, and reduced to its "
            "largest 3D component. Videos: forward from the prompted frame. 2D images "
            "(PNG, JPG, ...): one frame, segmented from its box. Boxes come "
            "from --box, or from the reference --labels (middle slice of each "
            "structure's extent; first frame for videos). The prediction is written "
            "with IMAGE's geometry, in the format of the --output suffix (.png for "
            "the label map of a 2D image). With --labels, prints Dice etc. per "
            'structure; with --json prints {"output": PATH, "structures": [rows]}.'
        ),
    )
    p.add_argument("image", type=Path,
                   help="image: volume (NIfTI, MHA, DICOM, ...), video or 2D image")
    p.add_argument("--labels", type=Path, help="reference label map (boxes and metrics)")
    p.add_argument("--structure", action="append", default=[], metavar="NAME|ID",
                   help="structure to segment: id, name, or 'label N' as segeval inspect "
                        "prints it (repeatable; default: all in --labels)")
    p.add_argument("--box", action="append", default=[], metavar="z,y0,x0,y1,x1[,label]",
                   help="box on slice/frame z (0 for a 2D image) in array coordinates, "
                        "y1/x1 exclusive (repeatable; label defaults to the matching "
                        "--structure, else 1, 2, ...)")
    add_model_option(p, ["promptable"], "builtin",
                     what="promptable model (the built-in one needs no download; MedSAM2 and "
                          "SAM2.1 use their pulled checkpoint, segeval models pull NAME, "
                          "unless --checkpoint)")
    p.add_argument("--checkpoint", type=Path,
                   help="checkpoint file of medsam2 or sam2.1-SIZE, or built-in weight file")
    add_device_option(p)
    p.add_argument("--window", default=None,
                   help="CT window: abdomen, lung, brain, mediastinum or W,L (default abdomen)")
    p.add_argument("--jitter", type=int, default=0, metavar="PX",
                   help="shift each edge of label-derived boxes by up to PX pixels")
    p.add_argument("--seed", type=int, default=0, help="seed of the jitter")
    p.add_argument("--no-largest", action="store_true",
                   help="keep every connected component (default: the largest per structure)")
    p.add_argument("--connectivity", type=int, choices=(6, 18, 26), default=6,
                   help="neighbours of the largest component (default 6; MedSAM2: 26)")
    p.add_argument("--stop-when-empty", action=argparse.BooleanOptionalAction, default=True,
                   help="end each direction at the first empty slice/frame (default: on; "
                        "MedSAM2 propagates to the end: --no-stop-when-empty)")
    add_modality_option(p)
    p.add_argument("--ct-mapping", choices=("window", "minmax"), default="window",
                   help="CT: window edges to 0-255 (default) or MedSAM2's min-max of the "
                        "clipped volume")
    p.add_argument("--output", "-o", type=Path, required=True, help="predicted label map to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    add_color_table_option(p)
    add_input_options(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def parse_boxes(texts: list[str], labels: list[int], shape: tuple[int, ...]) -> list:
    """``--box`` texts to :class:`~napari_segeval.prompts.box.Box` objects, checked.

    Examples
    --------
    >>> parse_boxes(["3,10,20,30,40"], [], (8, 64, 64))
    [Box(y0=10, x0=20, y1=30, x1=40, index=3, label=1)]
    """
    from napari_segeval._errors import SegEvalError
    from napari_segeval.prompts.box import Box

    boxes = []
    for i, text in enumerate(texts):
        try:
            vals = [int(float(v)) for v in text.split(",")]
        except ValueError:
            vals = []
        if len(vals) not in (5, 6):
            raise SegEvalError(f"--box {text!r}: expected z,y0,x0,y1,x1[,label] integers")
        z, y0, x0, y1, x1 = vals[:5]
        label = vals[5] if len(vals) == 6 else (labels[i] if i < len(labels) else i + 1)
        if not 0 <= z < shape[0]:
            raise SegEvalError(f"--box {text!r}: slice/frame {z} outside 0..{shape[0] - 1}")
        if not (0 <= y0 < y1 <= shape[1] and 0 <= x0 < x1 <= shape[2]):
            raise SegEvalError(f"--box {text!r}: need 0 <= y0 < y1 <= {shape[1]} and "
                               f"0 <= x0 < x1 <= {shape[2]}")
        if label < 1:
            raise SegEvalError(f"--box {text!r}: label must be >= 1")
        boxes.append(Box(y0, x0, y1, x1, index=z, label=label))
    return boxes


def _load_model(args: argparse.Namespace):
    from napari_segeval.models.registry import load_promptable

    return load_promptable(args.model, checkpoint=args.checkpoint, device=args.device)


def check_output(path: Path, case) -> None:
    """Refuse an --output the label map cannot be written to, before any model runs."""
    import numpy as np

    from napari_segeval._errors import WriteError
    from napari_segeval.io._formats import suffix
    from napari_segeval.io.write import LABEL_WRITABLE

    if suffix(path) not in LABEL_WRITABLE:
        raise WriteError(f"{path}: cannot write a label map in this format (use one of "
                         f"{', '.join(LABEL_WRITABLE)})")
    if not path.parent.is_dir():
        raise WriteError(f"{path}: folder {path.parent} does not exist")
    if suffix(path) == ".png":
        from napari_segeval.io._raster import check_png_labels

        check_png_labels(path, np.zeros(case.spatial_shape, np.uint8), case.geometry)


def run(args: argparse.Namespace) -> int:
    """Build the prompts, propagate, write the prediction and report metrics."""
    import numpy as np

    from napari_segeval._errors import SegEvalError, WriteError
    from napari_segeval.cli._metrics import rows_table
    from napari_segeval.io import resolve_structure, write_labels
    from napari_segeval.prompts.from_labels import boxes_from_labels
    from napari_segeval.propagation import promptable_kind, propagate_image, propagation_mode

    if args.output.exists() and not args.overwrite:
        raise WriteError(f"{args.output} exists: pass --overwrite to replace it")
    if args.jitter < 0:
        raise SegEvalError(f"--jitter must be >= 0 pixels, got {args.jitter}")
    case = read_input(args, args.image, args.labels)
    check_output(args.output, case)
    kind = promptable_kind(case)
    mode = propagation_mode(kind)
    shape = case.spatial_shape if kind != "image" else (1, *case.spatial_shape)
    if args.structure and case.labels is None and not args.box:
        raise SegEvalError("--structure needs --labels (boxes come from the reference)")
    present = None if case.labels is None else np.unique(case.labels)
    wanted = [resolve_structure(s, case.structures, present, source=args.labels)
              for s in args.structure]
    if args.box:
        boxes = parse_boxes(args.box, wanted, shape)
    elif case.labels is not None:
        boxes = boxes_from_labels(case.labels, wanted or None, mode=mode, jitter=args.jitter,
                                  seed=args.seed)
    else:
        raise SegEvalError("give --box z,y0,x0,y1,x1 or reference --labels to derive boxes")
    if not boxes:
        raise SegEvalError(f"{args.labels}: no structures to segment (labels are empty)")

    model = _load_model(args)
    modality = args.modality or case.modality
    result = propagate_image(model, case, boxes, window=args.window, modality=modality,
                             ct_mapping=args.ct_mapping, keep_largest=not args.no_largest,
                             connectivity=args.connectivity,
                             stop_when_empty=args.stop_when_empty)
    out = write_labels(args.output, result.labels, case.geometry, overwrite=args.overwrite)

    rows: list[dict] = []
    if case.labels is not None:
        from napari_segeval.metrics import ROW_KEYS, structure_table

        prompted = {b.label: case.structure_name(b.label) for b in boxes}
        rows = structure_table(case.labels, result.labels, case.spacing, structures=prompted)
        rows = [{k: r.get(k) for k in ROW_KEYS} for r in rows]
    where = {"volume": "on slice {}", "video": "on frame {}", "image": ""}[kind]
    lines = [f"{b.label} {case.structure_name(b.label)}: box (y0={b.y0}, x0={b.x0}, "
             f"y1={b.y1}, x1={b.x1}) {where.format(b.index)}".rstrip() for b in boxes]
    if rows:
        lines.append(rows_table(rows))
    how = "2D image as one frame" if kind == "image" else f"{mode} mode"
    stop = "" if kind == "image" else (", stop when empty" if args.stop_when_empty
                                       else ", to the end")
    lines.append(f"wrote {out} ({model.name} model, {how}, modality {modality}{stop})")
    emit(args, {"output": str(out), "structures": rows, "modality": modality},
         "\n".join(lines))
    return 0
