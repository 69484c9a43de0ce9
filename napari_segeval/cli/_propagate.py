"""``segeval propagate``: prompted propagation through a volume, a video or a 2D image."""

from __future__ import annotations

import argparse
from pathlib import Path

from napari_segeval._errors import SegEvalError
from napari_segeval.cli import _common as common


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "propagate",
        help="segment structures from prompts (boxes, points) by slice/frame propagation",
        description=(
            "Segment IMAGE from prompts with a promptable model (MedSAM2 recipe). "
            "Each structure takes boxes, positive and negative points and mask prompts "
            "on any slices/frames. Volumes: the mask is propagated forward from the "
            "first prompted slice to the last slice and backward from the last "
            "prompted slice to the first, merged, and reduced to its largest 3D "
            "component. Videos: forward from the first prompted frame. 2D images "
            "(PNG, JPG, ...): one frame (z is 0). Prompts come from --prompts FILE, "
            "then --box and --point in the order given, or else from the reference "
            "--labels (a box on the middle slice of each structure's extent; first "
            "frame for videos). The prediction is written with IMAGE's geometry, in "
            "the format of the --output suffix (.png for the label map of a 2D image), "
            "and the prompts used next to it (OUTPUT_STEM.prompts.json). With --labels, "
            'prints Dice etc. per structure; with --json prints {"output": PATH, '
            '"prompts": PATH, "structures": [rows]}.'
        ),
    )
    p.add_argument(
        "image", type=Path, help="image: volume (NIfTI, MHA, DICOM, ...), video or 2D image"
    )
    p.add_argument("--labels", type=Path, help="reference label map (boxes and metrics)")
    common.add_structure_option(p, "structure to segment", ": all in --labels")
    p.add_argument(
        "--prompts",
        type=Path,
        metavar="FILE",
        help="prompts JSON (written by segeval propagate or the viewer) to replay",
    )
    p.add_argument(  # --box and --point go to prompt_args in the order given
        "--box",
        dest="prompt_args",
        action="append",
        type=lambda text: ("box", text),
        default=[],
        metavar="z,y0,x0,y1,x1[,label]",
        help="box on slice/frame z (0 for a 2D image) in array coordinates, "
        "y1/x1 exclusive (repeatable; label defaults to the matching "
        "--structure, else 1, 2, ...)",
    )
    p.add_argument(
        "--point",
        dest="prompt_args",
        action="append",
        type=lambda text: ("point", text),
        metavar="z,y,x[,+|-][,label]",
        help="positive (+, default) or negative (-) point on slice/frame z at "
        "pixel (y, x) (repeatable; label defaults to that of the prompt "
        "before it, else the first --structure, else 1)",
    )
    common.add_model_option(
        p,
        ["promptable"],
        "builtin",
        what="promptable model (the built-in one needs no download; MedSAM2 and "
        "SAM2.1 use their pulled checkpoint, segeval models pull NAME, "
        "unless --checkpoint)",
    )
    p.add_argument(
        "--checkpoint",
        type=Path,
        help="checkpoint file of medsam2 or sam2.1-SIZE, or built-in weight file",
    )
    common.add_device_option(p)
    common.add_precision_option(p)
    p.add_argument(
        "--window",
        default=None,
        help="CT window: abdomen, lung, brain, mediastinum or W,L (default abdomen)",
    )
    p.add_argument(
        "--jitter",
        type=int,
        default=0,
        metavar="PX",
        help="shift each edge of label-derived boxes by up to PX pixels",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the jitter")
    common.add_flag(
        p, "--no-largest", "keep every connected component (default: the largest per structure)"
    )
    p.add_argument(
        "--connectivity",
        type=int,
        choices=(6, 18, 26),
        default=6,
        help="neighbours of the largest component (default 6; MedSAM2: 26)",
    )
    p.add_argument(
        "--stop-when-empty",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="end each direction at the first empty slice/frame (default: on; "
        "MedSAM2 propagates to the end: --no-stop-when-empty)",
    )
    common.add_modality_option(p)
    p.add_argument(
        "--ct-mapping",
        choices=("window", "minmax"),
        default="window",
        help="CT: window edges to 0-255 (default) or MedSAM2's min-max of the clipped volume",
    )
    p.add_argument("--output", "-o", type=Path, required=True, help="predicted label map to write")
    common.add_flag(p, "--overwrite", "replace an existing --output")
    common.add_reader_options(p)
    p.set_defaults(func=run)


def _box(text: str, default: int, shape: tuple[int, ...]):
    from napari_segeval.prompts.box import Box

    try:
        vals = [int(float(v)) for v in text.split(",")]
    except ValueError:
        vals = []
    if len(vals) not in (5, 6):
        raise SegEvalError(f"--box {text!r}: expected z,y0,x0,y1,x1[,label] integers")
    z, y0, x0, y1, x1 = vals[:5]
    label = vals[5] if len(vals) == 6 else default
    if not 0 <= z < shape[0]:
        raise SegEvalError(f"--box {text!r}: slice/frame {z} outside 0..{shape[0] - 1}")
    if not (0 <= y0 < y1 <= shape[1] and 0 <= x0 < x1 <= shape[2]):
        raise SegEvalError(
            f"--box {text!r}: need 0 <= y0 < y1 <= {shape[1]} and 0 <= x0 < x1 <= {shape[2]}"
        )
    if label < 1:
        raise SegEvalError(f"--box {text!r}: label must be >= 1")
    return Box(y0, x0, y1, x1, index=z, label=label)


def parse_point(text: str, default: int, shape: tuple[int, ...]):
    """One ``--point z,y,x[,+|-][,label]`` as a :class:`~napari_segeval.prompts.Point`."""
    from napari_segeval.prompts.prompt_set import Point

    parts = [t.strip() for t in text.split(",")]
    bad = SegEvalError(
        f"--point {text!r}: expected z,y,x[,+|-][,label] (z and label "
        "integers, y and x pixel coordinates)"
    )
    if len(parts) not in (3, 4, 5):
        raise bad
    positive, label = True, default
    rest = parts[3:]
    if rest and rest[0] in ("+", "-"):
        positive = rest.pop(0) == "+"
    try:
        z, y, x = int(parts[0]), float(parts[1]), float(parts[2])
        if rest:
            label = int(rest.pop(0))
    except ValueError:
        raise bad from None
    if rest or label < 1:
        raise bad
    if not 0 <= z < shape[0]:
        raise SegEvalError(f"--point {text!r}: slice/frame {z} outside 0..{shape[0] - 1}")
    point = Point(y, x, index=z, label=label, positive=positive)
    py, px = point.pixel
    if not (0 <= py < shape[1] and 0 <= px < shape[2]):
        raise SegEvalError(
            f"--point {text!r}: ({y:g}, {x:g}) lies outside the {shape[1]} x {shape[2]} slice/frame"
        )
    return point


def command_line_prompts(
    items: list[tuple[str, str]], wanted: list[int], shape: tuple[int, ...]
) -> list:
    """``--box``/``--point`` in command-line order as prompts (label defaults: help text)."""
    prompts: list = []
    n_boxes = 0
    for kind, text in items:
        if kind == "box":
            default = wanted[n_boxes] if n_boxes < len(wanted) else n_boxes + 1
            prompts.append(_box(text, default, shape))
            n_boxes += 1
        else:
            default = prompts[-1].label if prompts else (wanted[0] if wanted else 1)
            prompts.append(parse_point(text, default, shape))
    return prompts


def _prompt_sets(
    args: argparse.Namespace, case, kind: str, mode: str, wanted: list[int], shape: tuple[int, ...]
) -> dict:
    """The prompt sets of the run (file, then command line; or from the labels), checked."""
    import numpy as np

    from napari_segeval.prompts.from_labels import boxes_from_labels
    from napari_segeval.prompts.prompt_file import PromptFile, read_prompts
    from napari_segeval.prompts.prompt_set import PromptSet

    where = {"volume": "slice", "video": "frame", "image": "frame"}[kind]
    present = None if case.labels is None else [int(v) for v in np.unique(case.labels) if v]
    sets: dict[int, PromptSet] = {}
    if args.prompts is not None:
        loaded = read_prompts(args.prompts)
        loaded.check(shape, dict(case.structures), present, where=where, source=str(args.prompts))
        sets.update(loaded.sets)
    for prompt in command_line_prompts(args.prompt_args, wanted, shape):
        sets[prompt.label] = sets.get(prompt.label, PromptSet(prompt.label)).add(prompt)
    if not sets and case.labels is not None:
        boxes = boxes_from_labels(
            case.labels, wanted or None, mode=mode, jitter=args.jitter, seed=args.seed
        )
        sets = {b.label: PromptSet.from_box(b) for b in boxes}
        if not sets:
            raise SegEvalError(f"{args.labels}: no structures to segment (labels are empty)")
    if not sets:
        raise SegEvalError(
            "give --prompts FILE, --box z,y0,x0,y1,x1 / --point z,y,x, or "
            "reference --labels to derive boxes"
        )
    PromptFile(sets, tuple(shape), {}).check(
        shape, dict(case.structures), present, where=where, source="--box/--point"
    )
    return sets


def check_output(path: Path, case) -> None:
    """Refuse an --output the label map cannot be written to, before any model runs."""
    import numpy as np

    from napari_segeval.io._formats import suffix
    from napari_segeval.io.write import LABEL_WRITABLE, check_target

    check_target(path, True, LABEL_WRITABLE, "a label map in ")
    if suffix(path) == ".png":
        from napari_segeval.io._raster import check_png_labels

        check_png_labels(path, np.zeros(case.spatial_shape, np.uint8), case.geometry)


def run(args: argparse.Namespace) -> int:
    """Build the prompts, propagate, write the prediction and its prompts, report metrics."""

    from napari_segeval.cli._metrics import reference_rows, rows_table
    from napari_segeval.io import write_labels
    from napari_segeval.io._formats import stem
    from napari_segeval.models.registry import load_promptable
    from napari_segeval.prompts.prompt_file import PromptFile, write_prompts
    from napari_segeval.prompts.prompt_set import describe
    from napari_segeval.propagation import (
        PropagationOptions,
        promptable_kind,
        propagate_image,
        propagation_mode,
    )

    prompts_out = args.output.with_name(f"{stem(args.output)}.prompts.json")
    common.refuse_existing((args.output, prompts_out), args.overwrite)
    if args.jitter < 0:
        raise SegEvalError(f"--jitter must be >= 0 pixels, got {args.jitter}")
    case = common.read_input(args, args.image, args.labels)
    check_output(args.output, case)
    kind = promptable_kind(case)
    mode = propagation_mode(kind)
    shape = case.spatial_shape if kind != "image" else (1, *case.spatial_shape)
    given = bool(args.prompt_args) or args.prompts is not None
    if args.structure and case.labels is None and not given:
        raise SegEvalError("--structure needs --labels (boxes come from the reference)")
    sets = _prompt_sets(args, case, kind, mode, common.wanted_structures(args, case), tuple(shape))

    model = load_promptable(
        args.model, checkpoint=args.checkpoint, device=args.device, precision=args.precision
    )
    modality = args.modality or case.modality
    options = PropagationOptions(
        keep_largest=not args.no_largest,
        connectivity=args.connectivity,
        stop_when_empty=args.stop_when_empty,
    )
    result = propagate_image(
        model,
        case,
        sets,
        window=args.window,
        modality=modality,
        ct_mapping=args.ct_mapping,
        options=options,
    )
    out = write_labels(args.output, result.labels, case.geometry, overwrite=args.overwrite)
    names = {lab: case.structure_name(lab) for lab in sets}
    saved = write_prompts(
        prompts_out, PromptFile(sets, tuple(shape), names), overwrite=args.overwrite
    )

    rows = reference_rows(case, result.labels, names)
    where = {"volume": "slice", "video": "frame", "image": ""}[kind]
    lines = []
    for lab, s in sets.items():
        for p in s.prompts:
            text = describe(p, where) if where else describe(p).rsplit(" on ", 1)[0]
            lines.append(f"{lab} {names[lab]}: {text}")
    if rows:
        lines.append(rows_table(rows))
    how = "2D image as one frame" if kind == "image" else f"{mode} mode"
    stop = (
        "" if kind == "image" else (", stop when empty" if args.stop_when_empty else ", to the end")
    )
    lines.append(f"wrote {out} ({model.name} model, {how}, modality {modality}{stop})")
    lines.append(f"wrote {saved} (the prompts, to replay with --prompts)")
    return common.emit(
        args,
        {"output": str(out), "prompts": str(saved), "structures": rows, "modality": modality},
        "\n".join(lines),
    )
