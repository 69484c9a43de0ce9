"""``segeval demo``: open napari on the bundled CT sample with the whole workflow done."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from napari_segeval._errors import SegEvalError
from napari_segeval.cli import _common as common


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="open napari with the CT sample, a propagated and an attacked prediction",
        description=(
            "Open napari with the bundled CT sample and its reference labels, put a box "
            "on the middle slice of the liver, propagate it with the built-in model, "
            "attack the model (PGD by default) and show the Dice panel filled (with "
            "--correct: correct the liver with a prompt on a slice it gets badly wrong "
            "instead). With --screenshot PATH, run without interaction (needs a display: under Linux "
            "without one, use xvfb-run), save a screenshot of the window and exit. With "
            "--results DIR, show the results browser on a segeval evaluate folder instead."
        ),
    )
    p.add_argument("--screenshot", type=Path, metavar="PNG", help="save a screenshot and exit")
    common.add_flag(p, "--overwrite", "replace an existing screenshot")
    from napari_segeval.attacks.registry import ATTACKS

    common.add_model_option(
        p,
        ["promptable"],
        "auto",
        extra=("auto",),
        flags=("--model", "--backend"),
        what="promptable model of the Prompt panel (a name; medsam2 with "
        "--checkpoint; auto: builtin, and for --correct the model whose "
        "correction helps: litemedsam when its extra is installed, else "
        "threshold)",
    )
    p.add_argument(
        "--checkpoint",
        type=Path,
        help="MedSAM2 checkpoint (required for medsam2) or built-in weight file",
    )
    common.add_device_option(p)
    p.add_argument(
        "--attack",
        default="pgd",
        choices=[*ATTACKS, "none"],
        help="attack of the Attack panel, or 'none'",
    )
    p.add_argument(
        "--eps",
        type=float,
        default=0.02,
        help="attack budget in normalized units (0.02 = 8 HU for the abdomen window)",
    )
    p.add_argument("--steps", type=int, default=5, help="attack iterations")
    common.add_flag(
        p,
        "--compare",
        "end in compare mode: reference, clean and attacked predictions in "
        "three linked views, the disagreement layer on the main canvas",
    )
    common.add_flag(
        p,
        "--correct",
        "end with a correction instead of an attack: on the largest slice of "
        "the liver that the prediction gets badly wrong, a click inside the "
        "larger error (a box from the reference when the model takes no "
        "clicks), re-propagated; the Prompt tab shows the prompts and how "
        "Dice moved",
    )
    p.add_argument(
        "--results",
        type=Path,
        metavar="DIR",
        help="instead: open a results folder of segeval evaluate in the Results "
        "panel with its worst row shown (with --screenshot: save it and exit)",
    )
    common.add_json_flag(p)
    p.set_defaults(func=run)


def demo_model(correct: bool) -> str:
    """The demo's model for ``--model auto``: the built-in one; for ``--correct`` a model whose
    first correction helps on the CT sample (docs/model_cards.md)."""
    if not correct:
        return "builtin"
    from napari_segeval.models.litemedsam._asset import installed_version

    return "litemedsam" if installed_version() is not None else "threshold"


#: Qt bindings napari can use (qtpy's names), the first one found is used.
QT_BINDINGS: tuple[str, ...] = ("PyQt6", "PySide6", "PyQt5", "PySide2")


def display_problem(
    environ: dict | None = None,
    platform: str | None = None,
    bindings: tuple[str, ...] | None = None,
) -> str | None:
    """Why no napari window can be opened here (no Qt binding, an offscreen/minimal Qt
    platform, no display under Linux), or None."""
    env = os.environ if environ is None else environ
    plat = sys.platform if platform is None else platform
    if bindings is None:
        import importlib.util

        bindings = tuple(b for b in QT_BINDINGS if importlib.util.find_spec(b) is not None)
    if not bindings:
        return (
            "napari needs a Qt binding and none is installed: pip install PyQt6 "
            "(or the 'all' extra: pip install 'napari-segeval[all]')"
        )
    qpa = env.get("QT_QPA_PLATFORM", "").split(":")[0]
    if qpa in ("offscreen", "minimal"):
        return (
            f"QT_QPA_PLATFORM={qpa} has no OpenGL, which napari needs to draw: unset "
            "it and run under a virtual display, e.g. "
            "`xvfb-run -a segeval demo --screenshot out.png`"
        )
    if not plat.startswith("linux"):
        return None
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    return (
        "no display (DISPLAY is not set): run it under a virtual display, e.g. "
        "`xvfb-run -a segeval demo --screenshot out.png`"
    )


def run(args: argparse.Namespace) -> int:
    """Open the demo; with ``--screenshot``, save it and exit."""
    problem = display_problem()
    if problem:
        raise SegEvalError(problem)
    common.refuse_existing([args.screenshot] if args.screenshot else [], args.overwrite)
    if args.results is not None:
        from napari_segeval._widgets.demo import run_results_demo
        from napari_segeval.evaluation.results import ResultsFolder

        ResultsFolder(args.results)  # not a results folder: one line, before the viewer opens
        out = run_results_demo(args.results, args.screenshot)
        return 0 if out is None else common.emit(args, {"screenshot": str(out)}, f"wrote {out}")
    from napari_segeval._widgets.demo import check_attack_settings, run_demo
    from napari_segeval.models.registry import PROMPTABLE, split_ref

    check_attack_settings(args.eps, args.steps)  # the panel would clamp them

    name, inline = split_ref(demo_model(args.correct) if args.model == "auto" else args.model)
    if name not in PROMPTABLE:
        raise SegEvalError(
            f"segeval demo runs a model of the Prompt panel's list "
            f"({', '.join(PROMPTABLE)}), not {args.model!r}"
        )
    out = run_demo(
        args.screenshot,
        backend=name,
        checkpoint=args.checkpoint or inline,
        device=args.device,
        attack=None if args.attack == "none" else args.attack,
        eps=args.eps,
        steps=args.steps,
        compare=args.compare,
        correct=args.correct,
    )
    return 0 if out is None else common.emit(args, {"screenshot": str(out)}, f"wrote {out}")
