"""``segeval attack``: adversarial attacks and noise on one case, clean vs attacked Dice."""

from __future__ import annotations

import argparse
from pathlib import Path

from napari_segeval._errors import SegEvalError, WriteError
from napari_segeval.cli import _common as common
from napari_segeval.cli._progress import progress_bar


def add_parser(sub: argparse._SubParsersAction) -> None:
    from napari_segeval.attacks.budget import NORMS
    from napari_segeval.attacks.config import SCHEDULES
    from napari_segeval.attacks.losses import FORWARD_ONLY_LOSSES, LOSSES, WEIGHTINGS
    from napari_segeval.attacks.registry import ATTACKS

    p = sub.add_parser(
        "attack",
        help="attack a dense or promptable model on one case (FGSM, PGD, APGD, Square, FAB, noise)",
        description=(
            "Perturb IMAGE within an epsilon ball (L-inf or L2, per case) in the model's "
            "normalized input units, so as to move the prediction away from the reference "
            "--labels (or from the clean prediction without labels). Dense models are "
            "attacked on the whole volume through the Gaussian sliding window; promptable "
            "models (boxes from --labels, fixed) through the whole propagation chain, "
            "a 2D image (PNG, JPG, ...) as one frame. "
            "Writes the perturbed image and the perturbation in raw units (float32), and "
            "the clean and attacked predictions, all with IMAGE's geometry, to "
            "--output-dir (created if missing; in the formats segeval evaluate saves: "
            "NIfTI for NIfTI, MHA for MHA/NRRD/DICOM and videos, PNG label maps and TIFF "
            "float images for PNG/JPG, TIFF for TIFF), and prints per-structure Dice "
            "clean vs attacked. Existing outputs are kept unless --overwrite. Epsilon is in "
            "normalized units (--eps) or raw units such as HU (--eps-raw); both are "
            "reported. Natural-image budgets such as 8/255 mean nothing for z-scored CT."
        ),
    )
    p.add_argument("image", type=Path, help="volume (NIfTI, MHA, DICOM, ...), video or 2D image")
    p.add_argument("--labels", type=Path, help="reference label map (attack target, boxes, Dice)")
    common.add_model_option(
        p,
        ["dense", "promptable"],
        "builtin-ct",
        what="dense or promptable model (promptable: boxes from --labels)",
    )
    p.add_argument("--checkpoint", type=Path, help="MedSAM2 checkpoint or built-in prompt weights")
    common.add_flag(
        p, "--trust-torchscript", "allow loading TorchScript dense models (they execute code)"
    )
    p.add_argument(
        "--attack",
        choices=list(ATTACKS),
        default="pgd",
        help="; ".join(f"{name}: {a.summary}" for name, a in ATTACKS.items()),
    )
    p.add_argument("--norm", choices=NORMS, default=NORMS[0])
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--eps", type=float, help="epsilon in normalized units")
    budget.add_argument("--eps-raw", type=float, help="epsilon in raw units (HU for CT)")
    p.add_argument(
        "--step-size",
        type=float,
        default=None,
        help="normalized units (default 2.5*eps/steps for PGD, 2*eps for APGD)",
    )
    p.add_argument("--steps", type=int, default=10, help="iterations (default 10; Square: queries)")
    p.add_argument("--restarts", type=int, default=1, help="random restarts (default 1)")
    p.add_argument(
        "--loss",
        choices=LOSSES + FORWARD_ONLY_LOSSES,
        default="ce",
        help="loss for FGSM/PGD/Square (APGD-CE/DLR fix theirs; hard-dice: Square only)",
    )
    p.add_argument(
        "--weighting",
        choices=[w for w in WEIGHTINGS if w],
        default=None,
        help="per-voxel loss weighting for PGD",
    )
    p.add_argument(
        "--schedule",
        default=None,
        choices=SCHEDULES,
        help="PGD step size: constant (default), cosine, step; APGD checkpoints: "
        "paper (default), rog; Square square size: rescaled (default), absolute",
    )
    common.add_flag(p, "--no-random-start", "start PGD/APGD at the image")
    common.add_flag(p, "--clamp", "keep perturbed inputs in the preprocessing's valid range")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--gradient",
        choices=("whole", "chunked"),
        default="whole",
        help="dense: autograd through the whole sliding window, or the same "
        "gradient one window batch at a time (bounded memory)",
    )
    p.add_argument("--overlap", type=float, default=0.5, help="dense window overlap")
    p.add_argument("--batch-size", type=int, default=2, help="dense windows per network call")
    p.add_argument("--window", default=None, help="CT window for promptable models")
    common.add_modality_option(p)
    p.add_argument(
        "--chain",
        choices=("full", "per-slice"),
        default="full",
        help="promptable models: gradients through the whole propagation chain, "
        "or each slice conditioned on the clean previous mask",
    )
    common.add_structure_option(p, "promptable: structure to prompt", " all")
    common.add_device_option(p)
    common.add_precision_option(p)
    common.add_flag(p, "--surface", "also compute HD95/ASSD/NSD")
    p.add_argument(
        "--output-dir",
        "-o",
        type=Path,
        required=True,
        help="folder for the four outputs (created, parents too, if missing)",
    )
    common.add_flag(p, "--overwrite", "replace existing outputs")
    common.add_reader_options(p)
    p.set_defaults(func=run)


def output_paths(image: Path, case, out_dir: Path) -> dict[str, Path]:
    """Where the four outputs go (``STEM_perturbed``, ``STEM_perturbation``,
    ``STEM_clean_pred``, ``STEM_attacked_pred``), in ``segeval evaluate``'s formats."""
    from napari_segeval.io._formats import output_formats, stem

    label_ext, image_ext = output_formats(image, case.axes)
    name = stem(image)
    return {
        key: out_dir / f"{name}_{part}{ext}"
        for key, part, ext in (
            ("perturbed_image", "perturbed", image_ext),
            ("perturbation", "perturbation", image_ext),
            ("clean_prediction", "clean_pred", label_ext),
            ("attacked_prediction", "attacked_pred", label_ext),
        )
    }


def _target(args: argparse.Namespace, case):
    from napari_segeval.attacks import DenseTarget, PromptTarget
    from napari_segeval.models.registry import is_promptable, load_dense, load_promptable

    if not is_promptable(args.model):
        if case.axes != "zyx":
            raise SegEvalError(f"{args.image}: dense models need a 3D volume, got {case.axes!r}")
        from napari_segeval.models.precision import model_precision

        model_precision(args.precision, None, args.device, args.model)  # dense: fp32 only
        dense = load_dense(args.model, trust_torchscript=args.trust_torchscript, device=args.device)
        return DenseTarget(
            dense, case, overlap=args.overlap, batch_size=args.batch_size, gradient=args.gradient
        )
    from napari_segeval.prompts.from_labels import boxes_from_labels
    from napari_segeval.propagation import promptable_kind, propagation_mode

    if case.labels is None:
        raise SegEvalError(f"--model {args.model} needs --labels (boxes come from the reference)")
    mode = propagation_mode(promptable_kind(case))
    boxes = boxes_from_labels(case.labels, common.wanted_structures(args, case) or None, mode=mode)
    if not boxes:
        raise SegEvalError(f"{args.labels}: no structures to prompt (labels are empty)")
    model = load_promptable(
        args.model, checkpoint=args.checkpoint, device=args.device, precision=args.precision
    )
    return PromptTarget(model, case, boxes, window=args.window, chain=args.chain)


def run(args: argparse.Namespace) -> int:
    """Read, attack, write the four outputs, print Dice clean vs attacked."""
    from napari_segeval.attacks import AttackConfig, attack_case, eps_from_raw
    from napari_segeval.io import write_image, write_labels

    if args.steps < 1 or args.restarts < 1:
        raise SegEvalError("--steps and --restarts must be >= 1")
    common.check_window(args)
    if args.output_dir.exists() and not args.output_dir.is_dir():
        raise WriteError(f"{args.output_dir}: exists and is not a folder")
    case = common.read_input(args, args.image, args.labels)
    if args.modality:
        case.modality = args.modality
    paths = output_paths(args.image, case, args.output_dir)
    common.refuse_existing(paths.values(), args.overwrite)
    target = _target(args, case)
    eps = args.eps
    if eps is None:
        eps = eps_from_raw(args.eps_raw, target.raw_per_normalized_unit)
    given = ("norm", "steps", "step_size", "loss", "restarts", "schedule", "weighting", "seed")
    options = {k: getattr(args, k) for k in given}
    try:
        config = AttackConfig(
            args.attack, eps=eps, random_start=not args.no_random_start, **options
        )
    except ValueError as exc:
        raise SegEvalError(f"invalid attack settings: {exc}") from exc
    try:
        args.output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(
            f"{args.output_dir}: cannot create the output folder ({exc.strerror or exc})"
        ) from exc
    with progress_bar("attack passes", "pass", enabled=not args.json) as progress:
        res = attack_case(target, config, clamp=args.clamp, surface=args.surface, progress=progress)
    for key, path in paths.items():  # the keys are the result's fields
        write = write_labels if key.endswith("prediction") else write_image
        write(path, getattr(res, key), case.geometry, overwrite=args.overwrite)

    unit = "HU" if case.modality.upper() == "CT" else "raw units"
    payload = {
        "attack": res.params["attack"],
        "eps_normalized": res.budget.eps_normalized,
        "eps_raw": res.budget.eps_raw,
        "raw_unit": unit,
        "modality": case.modality,
        "raw_per_normalized_unit": res.budget.raw_per_normalized_unit,
        "perturbation_norm": res.perturbation_norm,
        "reference": res.params["reference"],
        "target": res.params["target"],
        "clean": res.clean_rows,
        "attacked": res.attacked_rows,
        "outputs": {k: str(v) for k, v in paths.items()},
    }
    rows = [
        [d["label"], d["name"], d["clean"], d["attacked"], d["clean"] - d["attacked"]]
        for d in res.dice_records()
    ]
    lines = [
        (
            f"{config.attack} ({config.norm}, steps={config.steps}, "
            f"step={config.effective_step_size:.4g}, seed={config.seed}) on {target.kind} model, modality {case.modality}, "
            f"Dice vs {res.params['reference']}"
        ),
        (
            f"eps = {res.budget.eps_normalized:.4g} normalized = {res.budget.eps_raw:.4g} {unit} "
            f"(1 normalized unit = {res.budget.raw_per_normalized_unit:.4g} {unit}); "
            f"perturbation {config.norm} norm {res.perturbation_norm['normalized']:.4g} normalized, "
            f"{res.perturbation_norm['raw']:.4g} {unit}"
        ),
        common.format_table(["label", "name", "dice_clean", "dice_attacked", "drop"], rows),
    ]
    lines += [f"wrote {p}" for p in paths.values()]
    return common.emit(args, payload, "\n".join(lines))
