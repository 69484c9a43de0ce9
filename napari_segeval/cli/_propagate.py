"""``segeval propagate``: box-prompted propagation through a volume or a video."""

from __future__ import annotations

import argparse
from pathlib import Path

from napari_segeval.cli._common import add_input_options, add_json_flag, emit, read_input


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``segeval propagate``."""
    p = sub.add_parser(
        "propagate",
        help="segment structures from box prompts by slice/frame propagation",
        description=(
            "Segment IMAGE from box prompts with a promptable model (MedSAM2 recipe). "
            "Volumes: the box is on a key slice and the mask is propagated forward to "
            "the last slice and backward to the first, merged, and reduced to its "
            "largest 3D component. Videos: forward from the prompted frame. Boxes come "
            "from --box, or from the reference --labels (middle slice of each "
            "structure's extent; first frame for videos). The prediction is written "
            "with IMAGE's geometry. With --labels, prints Dice etc. per structure; "
            'with --json prints {"output": PATH, "structures": [rows]}.'
        ),
    )
    p.add_argument("image", type=Path, help="image: volume (NIfTI, MHA, DICOM, ...) or video")
    p.add_argument("--labels", type=Path, help="reference label map (boxes and metrics)")
    p.add_argument("--structure", action="append", default=[], metavar="NAME|ID",
                   help="structure to segment (repeatable; default: all in --labels)")
    p.add_argument("--box", action="append", default=[], metavar="z,y0,x0,y1,x1[,label]",
                   help="box on slice/frame z in array coordinates, y1/x1 exclusive "
                        "(repeatable; label defaults to the matching --structure, else 1, 2, ...)")
    p.add_argument("--model", choices=("builtin", "medsam2"), default="builtin",
                   help="promptable model (default: the built-in one, no download)")
    p.add_argument("--checkpoint", type=Path,
                   help="MedSAM2 checkpoint (required for medsam2) or built-in weight file")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda", "mps"))
    p.add_argument("--window", default=None,
                   help="CT window: abdomen, lung, brain, mediastinum or W,L (default abdomen)")
    p.add_argument("--jitter", type=int, default=0, metavar="PX",
                   help="shift each edge of label-derived boxes by up to PX pixels")
    p.add_argument("--seed", type=int, default=0, help="seed of the jitter")
    p.add_argument("--no-largest", action="store_true",
                   help="keep every connected component (default: the largest per structure)")
    p.add_argument("--output", "-o", type=Path, required=True, help="predicted label map to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    add_input_options(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def _structure_id(token: str, names: dict[int, str]) -> int:
    from napari_segeval._errors import SegEvalError

    if token.strip().isdigit():
        return int(token)
    by_name = {v.lower(): k for k, v in names.items()}
    if token.strip().lower() in by_name:
        return by_name[token.strip().lower()]
    known = ", ".join(f"{k}={v}" for k, v in sorted(names.items())) or "none named"
    raise SegEvalError(f"unknown structure {token!r} (structures: {known})")


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
    from napari_segeval._errors import SegEvalError

    if args.model == "medsam2":
        if args.checkpoint is None:
            raise SegEvalError("--model medsam2 needs --checkpoint PATH (e.g. MedSAM2_latest.pt)")
        from napari_segeval.models.medsam2 import load_medsam2

        return load_medsam2(args.checkpoint, device=args.device)
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel

    return BuiltinPromptModel(args.checkpoint, device=args.device)


def run(args: argparse.Namespace) -> int:
    """Build the prompts, propagate, write the prediction and report metrics."""
    from napari_segeval._errors import SegEvalError, WriteError
    from napari_segeval.cli._metrics import ROW_KEYS, rows_table
    from napari_segeval.io import write_labels
    from napari_segeval.prompts.from_labels import boxes_from_labels
    from napari_segeval.propagation import propagate_case

    if args.output.exists() and not args.overwrite:
        raise WriteError(f"{args.output} exists: pass --overwrite to replace it")
    if args.jitter < 0:
        raise SegEvalError(f"--jitter must be >= 0 pixels, got {args.jitter}")
    case = read_input(args, args.image, args.labels)
    names = dict(case.structures)
    shape = case.spatial_shape
    if len(shape) != 3:
        raise SegEvalError(f"{args.image}: propagation needs a volume or a video, got {case.axes}")
    mode = "video" if case.is_video else "volume"
    if args.structure and case.labels is None and not args.box:
        raise SegEvalError("--structure needs --labels (boxes come from the reference)")
    wanted = [_structure_id(s, names) for s in args.structure]
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
    frames = model.preprocess(case.image, case.modality, args.window)
    result = propagate_case(model, frames, boxes, mode=mode, keep_largest=not args.no_largest)
    out = write_labels(args.output, result.labels, case.geometry, overwrite=args.overwrite)

    rows: list[dict] = []
    if case.labels is not None:
        from napari_segeval.metrics import structure_table

        prompted = {b.label: case.structure_name(b.label) for b in boxes}
        rows = structure_table(case.labels, result.labels, case.spacing, structures=prompted)
        rows = [{k: r.get(k) for k in ROW_KEYS} for r in rows]
    lines = [f"{b.label} {case.structure_name(b.label)}: box (y0={b.y0}, x0={b.x0}, "
             f"y1={b.y1}, x1={b.x1}) on {'frame' if mode == 'video' else 'slice'} {b.index}"
             for b in boxes]
    if rows:
        lines.append(rows_table(rows))
    lines.append(f"wrote {out} ({model.name} model, {mode} mode)")
    emit(args, {"output": str(out), "structures": rows}, "\n".join(lines))
    return 0
