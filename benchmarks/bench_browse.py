"""Results-browser latency: select a row of the *Results* panel -> the case is on screen.

Used by ``bench_viewer.py`` (run that one). Two results folders are written with
``run_evaluation`` and a synthetic protocol (:data:`SYNTHETIC`, no model: the
"clean" prediction is the reference shifted by 2 voxels, the "attacked" one by 6,
the perturbed image is the image plus 8 HU times a random sign), so the files are
exactly what ``segeval evaluate`` writes (NIfTI, source geometry, encoded in
the worker, written atomically):

* **bundled CT**: ``sample_data/ct/ct_001.nii.gz`` (40 x 112 x 112), as two cases;
* **large**: a generated CT-like volume of ``shape`` (default 300 x 512 x 512,
  int16 with noise, spacing 1 x 0.8 x 0.8 mm) with two structures, as two cases.

Each case shows six layers: five from files (image, reference, clean and
attacked predictions, perturbation) and the perturbed image, which the browser
computes as image + perturbation (bit for bit the saved perturbed file; see
``napari_segeval.evaluation.loaded``). The time runs from
``ResultsPanel.select_row`` (a click) to the end of the panel's swap: the
worker has read and checked every file, the layers hold the new data, the
Dice panel has recounted both predictions and the view is on the worst slice,
and Qt's event queue has been drained once. Selections alternate between the
two cases, so every one reloads; the first selection (which also builds the
layers' visuals) is reported apart. Between selections the Dice panel's
background surface-metrics job is stopped, so it does not compete. The split:
``worker_read`` (reading, decompressing and checking the files, in the worker
thread) and ``main_thread_swap`` (layers updated, Dice panel recounted, view
moved; the only part during which the viewer does not respond).
``worker_read_cpu`` is the CPU time the process spent meanwhile (the reading
threads' work, decompression above all): on a shared machine it says what the
wall time would be with free cores.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from napari_segeval.evaluation.protocols import CaseOutput, Params, Protocol
from napari_segeval.evaluation.protocols import _common as C

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = (
    ROOT / "sample_data" / "ct" / "ct_001.nii.gz",
    ROOT / "sample_data" / "ct" / "ct_001_labels.nii.gz",
)
ATTACK = "synthetic-sign eps=8"


def _run_case(spec, params: Params) -> CaseOutput:
    case = C.load_case(spec)
    ref = case.labels
    clean = np.roll(ref, 2, axis=-1)
    attacked = np.roll(ref, 6, axis=-1)
    rng = np.random.default_rng(0)
    pert = 8.0 * rng.choice(np.array([-1.0, 1.0], np.float32), size=case.image.shape)
    perturbed = case.image.astype(np.float32) + pert
    structures = dict(case.structures) or {1: "organ", 2: "core"}
    rows = C.score(ref, clean, case.spacing, structures, "clean", surface=False)
    rows += C.score(ref, attacked, case.spacing, structures, ATTACK, surface=False)
    preds = {"clean": clean, ATTACK: attacked}
    images = {f"perturbed:{ATTACK}": perturbed, f"perturbation:{ATTACK}": pert}
    return CaseOutput(rows, {}, arrays=C.case_arrays(case, preds, images))


#: The benchmark's protocol (resolvable as ``bench_browse:SYNTHETIC`` by the browser).
SYNTHETIC = Protocol(
    name="bench_browse:SYNTHETIC",
    version="1.0",
    params=Params,  # no parameters
    run_case=_run_case,
    summarize=lambda rows, params: {},
)


def _large_case(folder: Path, shape) -> tuple[Path, Path]:
    from napari_segeval.io import Geometry, write_image, write_labels

    z, y, x = np.ogrid[: shape[0], : shape[1], : shape[2]]
    c = [s / 2 for s in shape]
    r = [s / 3 for s in shape]
    ell = ((z - c[0]) / r[0]) ** 2 + ((y - c[1]) / r[1]) ** 2 + ((x - c[2]) / r[2]) ** 2
    labels = np.zeros(shape, np.uint8)
    labels[ell <= 1] = 1
    labels[ell <= 0.2] = 2
    rng = np.random.default_rng(1)
    image = rng.normal(0, 20, shape).astype(np.int16)
    image += np.array([-1000, 60, 140], np.int16)[labels]
    g = Geometry((1.0, 0.8, 0.8), (-200.0, -200.0, -150.0), (1, 0, 0, 0, 1, 0, 0, 0, 1))
    img, lab = folder / "large.nii.gz", folder / "large_labels.nii.gz"
    write_image(img, image, g)
    write_labels(lab, labels, g)
    return img, lab


def _results(folder: Path, image: Path, labels: Path, structures: dict) -> Path:
    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.evaluation.layouts import CaseSpec

    specs = [
        CaseSpec(cid, (str(image),), str(labels), root=str(image.parent), structures=structures)
        for cid in ("case_a", "case_b")
    ]
    out = folder / "results"
    run_evaluation(specs, SYNTHETIC, out, workers=1, report=False)
    return out


def _timed_selections(out: Path, repeats: int) -> dict:
    import napari
    from qtpy.QtWidgets import QApplication

    from napari_segeval._widgets.results.panel import ResultsPanel

    app = QApplication.instance() or QApplication([])
    viewer = napari.Viewer(show=True)
    viewer.window.resize(1400, 900)
    panel = ResultsPanel(viewer)
    viewer.window.add_dock_widget(panel, name="Results", area="right")

    def wait(cond) -> None:
        while not cond():
            app.processEvents()
            time.sleep(0.001)

    panel.open_folder(out)
    wait(lambda: panel.folder is not None and not panel.runner.running)
    rows = panel.visible_rows()
    first_row = {
        cid: next(i for i, r in enumerate(rows) if r["case"] == cid) for cid in ("case_a", "case_b")
    }
    import napari_segeval._widgets.results.panel as results_module

    work: list[float] = []
    job = results_module.row_job

    cpu: list[float] = []

    def timed_job(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        out = job(*args, **kwargs)
        work.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)  # all threads: the reading pool's work
        return out

    results_module.row_job = timed_job
    swap: list[float] = []
    inner = panel._loaded

    def timed_loaded(result) -> None:
        t0 = time.perf_counter()
        inner(result)
        swap.append(time.perf_counter() - t0)

    panel._loaded = timed_loaded
    total: list[float] = []
    for i in range(2 * repeats + 1):
        cid = ("case_a", "case_b")[i % 2]
        t0 = time.perf_counter()
        panel.select_row(first_row[cid])
        wait(
            lambda cid=cid: (
                not panel.runner.running
                and panel.loaded is not None
                and panel.loaded.case_id == cid
            )
        )
        app.processEvents()
        total.append(time.perf_counter() - t0)
        if not panel.evaluate.dice.records:
            raise RuntimeError("the Dice panel was not filled")
        dice = panel.evaluate.dice
        dice.surface_timer.stop()
        if dice.surface_runner.running:
            dice.surface_runner.cancel()
            wait(lambda d=dice: not d.surface_runner.running)
    n_layers = len(viewer.layers)
    results_module.row_job = job
    viewer.close()
    rest = total[1:]
    from napari_segeval.io._gzip import backend

    return {
        "first_selection_s": total[0],
        "inflater": backend(),
        "selection_median_s": statistics.median(rest),
        "selection_min_s": min(rest),
        "selection_max_s": max(rest),
        "worker_read_median_s": statistics.median(work[1:]),
        "worker_read_cpu_median_s": statistics.median(cpu[1:]),
        "main_thread_swap_median_s": statistics.median(swap[1:]),
        "selections": len(rest),
        "layers": n_layers,
        "load_average_1min": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }


def browse(shape, repeats: int = 3) -> dict:
    """Row-to-screen latency for the bundled CT and a generated ``shape`` case."""
    report = {}
    with tempfile.TemporaryDirectory(prefix="bench-browse-") as tmp:
        tmp = Path(tmp)
        (tmp / "ct").mkdir()
        names = {1: "liver", 2: "spleen", 3: "kidney_right", 4: "kidney_left", 5: "liver_tumour"}
        out = _results(tmp / "ct", *BUNDLED, names)
        report["bundled_ct"] = {"shape": [40, 112, 112], **_timed_selections(out, repeats)}
        (tmp / "large").mkdir()
        img, lab = _large_case(tmp / "large", shape)
        t0 = time.perf_counter()
        out = _results(tmp / "large", img, lab, {1: "organ", 2: "core"})
        sizes = {p.name: p.stat().st_size for p in (out / "predictions" / "case_a").iterdir()}
        report["large"] = {
            "shape": list(shape),
            "evaluate_s": time.perf_counter() - t0,
            "file_bytes": sizes,
            **_timed_selections(out, repeats),
        }
    return report
