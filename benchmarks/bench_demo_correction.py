"""The first correction a newcomer sees: ``segeval demo --correct``'s, headless, per model.

The demo puts the reference's box on the liver's middle slice of the bundled CT sample,
propagates it, then corrects the liver as a person would on the largest slice the
prediction gets badly wrong (:func:`napari_segeval.metrics.largest_failing_slice`):
a click inside the larger error for a model that takes clicks, the reference's box on
that slice for a box-only model (:func:`napari_segeval.prompts.next_correction`), and
re-propagates through a :class:`~napari_segeval.propagation.PropagationSession` (the
viewer's path without Qt). Printed per model: the corrected slice, its Dice before and
after, and the liver's 3D Dice before and after. The demo's default model must be one
whose correction helps (``PASS``/``FAIL``: the slice's Dice rises and the 3D Dice does
not fall).

Run: ``.venv/bin/python benchmarks/bench_demo_correction.py [--models litemedsam builtin]``
(``litemedsam`` needs the extra of that name).
"""

from __future__ import annotations

import argparse

import numpy as np


def _dice(a: np.ndarray, b: np.ndarray) -> float:
    s = int(a.sum()) + int(b.sum())
    return 1.0 if s == 0 else 2.0 * float((a & b).sum()) / s


def correction(model_name: str) -> dict:
    """The demo's propagation and correction of the liver with ``model_name``."""
    from napari_segeval.io import read_case
    from napari_segeval.metrics import largest_failing_slice
    from napari_segeval.models.registry import load_promptable
    from napari_segeval.phantoms.samples import sample_info, sample_path
    from napari_segeval.prompts import box_from_labels, next_correction
    from napari_segeval.propagation import PropagationSession

    info = sample_info("ct")
    case = read_case(
        sample_path("ct", "image"), sample_path("ct", "labels"), modality=info.get("modality")
    )
    labels = np.asarray(case.labels)
    names = case.structures or {int(k): v for k, v in info["structures"].items()}
    liver = next(k for k, v in names.items() if v == "liver")
    model = load_promptable(model_name, device="cpu")
    session = PropagationSession.from_image(model, case)
    ref = labels == liver
    session.add(box_from_labels(labels, liver))  # the middle slice
    before = session.propagate().labels == liver
    k = largest_failing_slice(labels, before.astype(np.uint8) * liver, liver)
    points = model.capabilities.points
    found = next_correction(
        ref, before, label=liver, kind="point" if points else "box", points=points, index=k
    )
    session.add(found.prompt)
    after = session.propagate().labels == liver
    return {
        "model": model_name,
        "slice": k,
        "prompt": type(found.prompt).__name__.lower(),
        "slice_before": _dice(ref[k], before[k]),
        "slice_after": _dice(ref[k], after[k]),
        "dice_before": _dice(ref, before),
        "dice_after": _dice(ref, after),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["litemedsam", "builtin"])
    args = ap.parse_args(argv)
    print("the demo's correction of the liver (bundled CT sample)")
    rows = [correction(m) for m in args.models]
    for r in rows:
        helped = r["slice_after"] > r["slice_before"] and r["dice_after"] >= r["dice_before"]
        print(
            f"{'PASS' if helped else 'FAIL'} {r['model']:<11} {r['prompt']} on slice "
            f"{r['slice']}: slice Dice {r['slice_before']:.3f} -> {r['slice_after']:.3f}, "
            f"liver Dice {r['dice_before']:.3f} -> {r['dice_after']:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
