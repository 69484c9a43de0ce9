"""``segeval segment``: dense (prompt-free) segmentation by Gaussian sliding window."""

from __future__ import annotations

import argparse
from pathlib import Path

from napari_segeval._errors import SegEvalError
from napari_segeval.cli import _common as common
from napari_segeval.cli._progress import progress_bar


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "segment",
        help="segment a volume with a dense model (built-in CT U-Net, TorchScript, nnU-Net)",
        description=(
            "Segment IMAGE with a dense model: resample to the model spacing, clip to "
            "the foreground percentiles and z-score, Gaussian-weighted sliding window "
            "(sigma = patch/8), softmax, resample back, argmax, then keep the largest "
            "component of organs and drop lesion components below the model's volume "
            "threshold (a module:factory model segments the case itself). The label map is "
            "written with IMAGE's geometry. With --labels, "
            "prints Dice etc. per structure; with --json prints "
            '{"output": PATH, "structures": [rows]}.'
        ),
    )
    p.add_argument("image", type=Path, help="volume (NIfTI, MHA/MHD, NRRD, DICOM folder)")
    common.add_model_option(p, ["dense"], "builtin-ct", what="dense model")
    common.add_flag(p, "--trust-torchscript", "allow loading TorchScript files (they execute code)")
    p.add_argument("--labels", type=Path, help="reference label map: print per-structure metrics")
    p.add_argument("--output", "-o", type=Path, required=True, help="predicted label map to write")
    common.add_flag(p, "--overwrite", "replace an existing --output")
    p.add_argument(
        "--overlap", type=float, default=0.5, help="window overlap in [0, 1) (default 0.5)"
    )
    p.add_argument("--batch-size", type=int, default=2, help="windows per network call (default 2)")
    common.add_flag(p, "--mirror", "mirroring test-time augmentation")
    common.add_flag(
        p, "--no-postprocess", "skip largest-component and small-lesion post-processing"
    )
    common.add_device_option(p)
    common.add_flag(
        p, "--cpu-accumulate", "keep the full-size accumulators in host memory (large volumes)"
    )
    p.add_argument("--tolerance", type=float, default=2.0, metavar="MM", help=common.TOLERANCE_HELP)
    common.add_input_options(p)
    common.add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read, segment, write, and report metrics against ``--labels``."""
    from napari_segeval.cli._metrics import reference_rows, rows_table
    from napari_segeval.io import write_labels
    from napari_segeval.models.dense import DenseModel, segment_case
    from napari_segeval.models.registry import load_dense

    common.refuse_existing([args.output], args.overwrite)
    common.check_window(args)
    common.check_tolerance(args)
    case = common.read_input(args, args.image, args.labels)
    if case.axes != "zyx":
        raise SegEvalError(f"{args.image}: dense models need a 3D volume, got axes {case.axes!r}")
    model = load_dense(args.model, trust_torchscript=args.trust_torchscript, device=args.device)
    if isinstance(model, DenseModel):
        with progress_bar("windows", "window", enabled=not args.json) as progress:
            result = segment_case(
                model,
                case,
                overlap=args.overlap,
                mirror=args.mirror,
                batch_size=args.batch_size,
                postprocess=not args.no_postprocess,
                accumulate_device="cpu" if args.cpu_accumulate else None,
                progress=progress,
            )
    else:  # a 2D U-Net file's model or a module:factory's segments the case itself
        result = model.segment(case)
    out = write_labels(args.output, result.labels, case.geometry, overwrite=args.overwrite)
    names = dict(model.structures)
    names.update({k: v for k, v in case.structures.items() if k in names})
    rows = reference_rows(case, result.labels, names, tolerance_mm=args.tolerance)
    lines = [rows_table(rows)] if rows else []
    lines.append(f"wrote {out} ({model.name}, {len(model.structures)} structures)")
    return common.emit(args, {"output": str(out), "structures": rows}, "\n".join(lines))
