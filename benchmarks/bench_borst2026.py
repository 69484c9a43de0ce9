"""The ``borst2026`` preset's two readings of the class averages on a 2D data set (CPU).

Runs ``segeval evaluate --protocol cv5-2d --preset borst2026`` (the built-in 2D
U-Net trained per fold) and prints, in percent, mean +- std over folds of
mDice and mIoU as the headline reads them (mmsegmentation's ``IoUMetric``: areas
summed per class over a fold's images), as the per-image formula of the
evaluation card reads them (the headline before protocol version 1.3), and as
the project's pooled counts read them; then the same readings of a *perfect*
prediction (the reference itself) on the same folds, where the headline is 100
and the per-image formula is capped by the images that miss a class.

``--data DIR`` runs on a 2D data set (the bundled ``sample_data/polyp`` by
default: 20 images, one of the two polyp classes in all but one of them).

Run: ``.venv/bin/python benchmarks/bench_borst2026.py [--iterations 300] --output /tmp/borst``
(about 12 minutes on one CPU thread with the default recipe).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

READINGS = (
    ("accumulated (headline)", None),
    ("per-image (card)", "per_image"),
    ("pooled counts", "pooled"),
)


def perfect_rows(data: Path, folds: dict) -> list[dict]:
    """cv5-2d rows of the reference scored against itself, tagged with ``folds``."""
    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.evaluation.protocols import _common as C
    from napari_segeval.evaluation.protocols import cv5_2d

    rows = []
    for spec in load_layout(data):
        if spec.case_id not in folds:
            continue
        ref = C.load_case(spec).labels
        classes = cv5_2d.class_set(dict(spec.structures), ref, ref)
        r = C.score(ref, ref, (1.0,) * ref.ndim, classes, "clean", empty="zero", surface=False)
        cv5_2d.add_counts(r, ref, ref)
        rows += [{**x, "case": spec.case_id, "fold": folds[spec.case_id]} for x in r]
    return rows


def table(title: str, results: dict) -> None:
    """Print the readings of one summary's ``results``."""
    print(f"\n{title}\n| reading | mDice % | mIoU % |\n|---|---|---|")
    for name, key in READINGS:
        block = results if key is None else results.get(key) or {}
        if "dice" in block:
            print(
                f"| {name} | "
                + " | ".join(
                    f"{block[m]['average']['mean']:.2f} +- {block[m]['average']['std']:.2f}"
                    for m in ("dice", "iou")
                )
                + " |"
            )
    print(f"absent rows (class in neither reference nor prediction): {results['absences']['rows']}")


def main(argv=None) -> int:
    """Run the preset, then score a perfect prediction on its folds."""
    from napari_segeval.evaluation import get_protocol, run_evaluation
    from napari_segeval.evaluation.protocols import cv5_2d

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, help="2D data set (default: the bundled polyp sample)")
    p.add_argument("--iterations", type=int, default=None, help="training iterations per fold")
    p.add_argument("--output", type=Path, required=True)
    a = p.parse_args(argv)
    if a.data is None:
        from napari_segeval.phantoms.samples import sample_root

        a.data = sample_root() / "polyp"
    params = {} if a.iterations is None else {"iterations": a.iterations}
    t0 = time.perf_counter()
    r = run_evaluation(a.data, "cv5-2d", a.output, preset="borst2026", params=params, workers=1)
    print(f"{a.data}: {r.n_ok} cases ok, {r.n_failed} failed; {time.perf_counter() - t0:.0f} s")
    table("trained built-in 2D U-Net", r.summary["results"])
    folds = json.loads((a.output / "splits.json").read_text())["folds"]
    preset = get_protocol("cv5-2d").resolve_params(preset="borst2026")
    table(
        "perfect prediction (the reference)", cv5_2d.summarize(perfect_rows(a.data, folds), preset)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
