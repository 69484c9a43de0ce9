"""Viewer benchmarks: napari start-up with vs without the plugin; Dice-panel latency; browsing.

Run under a display (Linux without one: ``xvfb-run -a``)::

    xvfb-run -a .venv/bin/python benchmarks/bench_viewer.py [--repeats 5] [--shape 300 512 512]

1. **Start-up**: ``import napari; napari.Viewer(show=False)`` timed in fresh
   subprocesses, alternating runs *with* the plugin and *without* it. "Without"
   hides the napari-segeval distribution from ``importlib.metadata`` before
   napari is imported, so npe2 never sees its entry point (no manifest read, no
   contributions); "with" installs the same wrapper but hides nothing, so both
   runs pay the same overhead. Both use one throw-away ``NAPARI_CONFIG``.
2. **Dice-panel latency** on a ``shape`` case (default 300 x 512 x 512): time
   from ``Labels.paint`` (one brush stroke, which emits ``events.paint``) until the
   panel's table holds the recounted overlap metrics; and the panel's own share
   (the recount and the table refresh, ``DicePanel.flush``).
3. **Results browser** (:mod:`bench_browse`): time from selecting a row of the
   *Results* panel to all layers shown and the Dice panel filled, for the bundled
   CT and for a generated ``--browse-shape`` case (default 300 x 512 x 512) with
   two predictions, a perturbed image and its perturbation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

STARTUP = r"""
import importlib.metadata as md, sys, time
hide = sys.argv[1] == "without"
_orig = md.distributions
def distributions(**kw):
    for d in _orig(**kw):
        name = (d.metadata["Name"] or "").lower().replace("_", "-")
        if hide and name == "napari-segeval":
            continue
        yield d
md.distributions = distributions
t = time.perf_counter()
import napari
v = napari.Viewer(show=False)
dt = time.perf_counter() - t
import npe2
names = {m.name for m in npe2.PluginManager.instance().iter_manifests()}
v.close()
print(dt, "napari-segeval" in names)
"""


def startup(repeats: int) -> dict:
    """Median start-up seconds with and without the plugin (alternating runs)."""
    times: dict[str, list[float]] = {"with": [], "without": []}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NAPARI_CONFIG": os.path.join(tmp, "settings.yaml")}
        for i in range(repeats * 2 + 1):
            mode = ("with", "without")[i % 2]
            out = subprocess.run(
                [sys.executable, "-c", STARTUP, mode],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            seconds, seen = out.stdout.split()[-2:]
            if i == 0:
                continue  # warm the file cache
            if (seen == "True") != (mode == "with"):
                raise RuntimeError(f"plugin visibility wrong in the {mode!r} run")
            times[mode].append(float(seconds))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "with_s": med["with"],
        "without_s": med["without"],
        "difference_s": med["with"] - med["without"],
        "runs": times,
    }


def _case(shape):
    import numpy as np

    z, y, x = np.ogrid[: shape[0], : shape[1], : shape[2]]
    c = [s / 2 for s in shape]
    r = [s / 3 for s in shape]
    ell = ((z - c[0]) / r[0]) ** 2 + ((y - c[1]) / r[1]) ** 2 + ((x - c[2]) / r[2]) ** 2
    ref = np.zeros(shape, np.uint8)
    ref[ell <= 1] = 1
    ref[(ell <= 0.2)] = 2
    pred = np.roll(ref, 4, axis=2)
    return ref, pred


def latency(shape, strokes: int) -> dict:
    """Stroke-to-table latency of the Dice panel (seconds, median and max)."""
    import napari
    import numpy as np
    from qtpy.QtWidgets import QApplication

    from napari_segeval._widgets._state import ViewerState
    from napari_segeval._widgets.evaluate.dice import DicePanel

    ref, pred = _case(shape)
    viewer = napari.Viewer(show=False)
    scale = (2.5, 0.8, 0.8)
    r = viewer.add_labels(
        ref,
        name="reference",
        scale=scale,
        metadata={"structures": {1: "organ", 2: "core"}, "axes": "zyx"},
    )
    p = viewer.add_labels(pred, name="prediction", scale=scale)
    state = ViewerState()
    state.set_reference(r)
    t = time.perf_counter()
    panel = DicePanel(viewer, state)
    state.set_prediction("clean", p)
    setup = time.perf_counter() - t
    flush_times: list[float] = []
    inner = panel.flush

    def timed_flush():
        t0 = time.perf_counter()
        inner()
        flush_times.append(time.perf_counter() - t0)

    panel._flush_timer.timeout.disconnect()
    panel._flush_timer.timeout.connect(timed_flush)
    app = QApplication.instance()
    rng = np.random.default_rng(0)
    p.brush_size = 15
    total: list[float] = []
    for _ in range(strokes):
        zz = int(rng.integers(shape[0] // 3, 2 * shape[0] // 3))
        before = [r["clean"]["dice"] for r in panel.records]
        n_flush = len(flush_times)
        t0 = time.perf_counter()
        p.paint((zz, shape[1] // 2, shape[2] // 2 + int(rng.integers(-50, 50))), 0)
        while len(flush_times) == n_flush:
            app.processEvents()
        total.append(time.perf_counter() - t0)
        if [r["clean"]["dice"] for r in panel.records] == before:
            raise RuntimeError("the stroke did not change the Dice value")
        deadline = time.perf_counter() + 0.05
        while time.perf_counter() < deadline:
            app.processEvents()
    # the surface metrics of the last state, for scale
    t0 = time.perf_counter()
    while panel.surface_runner.running or panel.surface_timer.isActive():
        app.processEvents()
        time.sleep(0.01)
    surface_wait = time.perf_counter() - t0
    viewer.close()
    return {
        "shape": list(shape),
        "setup_s": setup,
        "strokes": strokes,
        "stroke_to_table_median_s": statistics.median(total),
        "stroke_to_table_max_s": max(total),
        "panel_flush_median_s": statistics.median(flush_times),
        "panel_flush_max_s": max(flush_times),
        "surface_metrics_settle_s_after_last_stroke": surface_wait,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--strokes", type=int, default=20)
    ap.add_argument("--shape", type=int, nargs=3, default=(300, 512, 512))
    ap.add_argument("--skip-startup", action="store_true")
    ap.add_argument("--skip-dice", action="store_true")
    ap.add_argument("--skip-browse", action="store_true")
    ap.add_argument("--browse-shape", type=int, nargs=3, default=(300, 512, 512))
    ap.add_argument(
        "--browse-repeats",
        type=int,
        default=3,
        help="row selections per case (alternating between two cases)",
    )
    args = ap.parse_args(argv)
    report = {}
    if not args.skip_startup:
        report["startup"] = startup(args.repeats)
    if not args.skip_dice:
        report["dice_panel"] = latency(tuple(args.shape), args.strokes)
    if not args.skip_browse:
        from bench_browse import browse

        report["results_browser"] = browse(tuple(args.browse_shape), args.browse_repeats)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
