"""A napari session that closes the viewer, or deletes a layer, while a panel's job runs.

Run as a script by ``test_job_lifecycle.py`` (a crash must fail that test, not
kill pytest)::

    python _midjob.py KIND ACTION [PATH]

``KIND`` is the job: ``propagate``, ``repropagate`` (a correction after a first
propagation), ``segment`` (``PATH``: dense weights), ``attack``, ``surface``,
``results`` (``PATH``: a results folder), ``uncertainty`` or ``download`` (the Prompt
tab's model picker downloads ``test-tiny`` from the local hub of
tests/models/hub_server.py into the cache folder ``PATH``, held after its first block). ``ACTION`` is ``close`` (the window closes as when a person
clicks its close button), ``viewer-close`` (:meth:`napari.Viewer.close`) or
``delete`` (the layer the job reads is deleted).

Mid-job is made deterministic with a gate: the panel's job function is
replaced by one that reports progress, says it entered, and waits for a release
before calling the real function. For ``close`` the gate honours cancel (the
job must be cancelled and its thread joined by the close itself); for
``delete`` it does not, and the real function runs to its end after the layer
is gone (the result must be dropped with a notification).

The last line printed is a JSON object of what happened; the exit status is 0
unless an exception reached an exception hook (3) or the session got stuck (4).
"""

from __future__ import annotations

import gc
import json
import sys
import threading
import time
import traceback

import numpy as np

ENTERED, RELEASE = threading.Event(), threading.Event()
ERRORS: list[str] = []
PARTIAL: list[str] = []  # the download's partial files when the session acted
STUCK_S = 300  # a hung session ends with status 4 instead of hanging the test


def record(*exc) -> None:
    ERRORS.append("".join(traceback.format_exception(*exc[:3]))[-2000:])


def wait_until(cond, what: str) -> None:
    from qtpy.QtWidgets import QApplication

    end = time.monotonic() + STUCK_S
    while not cond():
        QApplication.processEvents()
        time.sleep(0.01)
        if time.monotonic() > end:
            print(json.dumps({"stuck": what, "errors": ERRORS}), flush=True)
            sys.stdout.flush()
            import os

            os._exit(4)


def spin(seconds: float) -> None:
    """Run the event loop for ``seconds`` (late reports of a job arrive here)."""
    end = time.monotonic() + seconds
    wait_until(lambda: time.monotonic() > end, "spin")


def gate(fn, honour_cancel: bool):
    """``fn`` behind a gate: report, say it entered, wait for RELEASE (see the module)."""
    from napari_segeval._cancel import check_cancel

    def gated(*args, progress=None, cancel=None, **kwargs):
        progress(0, 1)
        ENTERED.set()
        while not RELEASE.wait(0.01):
            if honour_cancel:
                check_cancel(cancel, "gated job")
        return fn(*args, progress=progress, cancel=cancel if honour_cancel else None, **kwargs)

    return gated


def patch(module, name: str, honour_cancel: bool) -> None:
    setattr(module, name, gate(getattr(module, name), honour_cancel))


def ct_session(viewer):
    """The CT sample and the Evaluate panel docked, threshold model, liver box drawn."""
    from napari_segeval._sample_data import sample_ct
    from napari_segeval._widgets.main import SegEvalWidget

    for data, kwargs, kind in sample_ct():
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    w = SegEvalWidget(viewer)
    viewer.window.add_dock_widget(w, name="Evaluate", area="right")
    w.prompt.backend.setCurrentText("threshold (no weights)")
    w.prompt.device.setCurrentText("cpu")
    w.state.set_current(1)
    w.prompt.box_from_reference()
    return w


def setup(kind: str, viewer, honour: bool, path: str | None):
    """Start the job of ``kind``; returns (runner, the layer it reads, panel)."""
    from napari_segeval._widgets import attack, evaluate_jobs, prompt, prompt_run, results, segment
    from napari_segeval.models.threshold import ThresholdPromptModel

    if kind == "results":
        from napari_segeval._widgets.demo import show_results

        panel = show_results(viewer, path)  # opens the folder and shows its worst row
        wait_until(lambda: panel.loaded is not None and not panel.runner.running
                   and not panel.evaluate.dice.surface_runner.running
                   and not panel.evaluate.dice._surface_timer.isActive(), "results shown")
        patch(results, "row_job", honour)
        rows = panel.visible_rows()
        other = next(i for i, r in enumerate(rows) if r["case"] == rows[0]["case"]
                     and r["structure"] != panel.row["structure"])
        panel.select_row(other)  # the case shown: the job reads its layers
        return panel.runner, panel.layers.layers["image"], panel
    w = ct_session(viewer)
    image = w.state.image
    if kind == "download":
        return start_download(w, path), image, w
    if kind == "propagate":
        patch(prompt_run, "propagate_session", honour)
        w.prompt.run_button.click()
        return w.prompt.runner, image, w
    if kind == "repropagate":
        w.prompt.run()  # the first propagation runs to its end
        wait_until(lambda: not w.prompt.runner.running, "first propagation")
        box = w.prompt.prompts()[1].prompts[0]
        w.prompt.tools.start_points(False).add([box.index + 2, box.y0 + 2, box.x0 + 2])
        wait_until(lambda: w.prompt.tools.list.count() == 2, "the click listed")
        patch(prompt_run, "propagate_session", honour)
        w.prompt.tools.buttons["repropagate"].click()
        return w.prompt.runner, image, w
    if kind == "uncertainty":
        patch(prompt, "uncertainty", honour)
        w.prompt.samples.setValue(2)
        w.prompt.uncertainty_button.click()
        return w.prompt.runner, image, w
    if kind == "segment":
        patch(segment, "segment_dense", honour)
        w.segment.source.setCurrentText("U-Net weights file")
        w.segment.path.setText(path)
        w.segment.device.setCurrentText("cpu")
        w.segment.run_button.click()
        return w.segment.runner, image, w
    if kind == "attack":
        patch(attack, "attack", honour)
        w.state.set_model(ThresholdPromptModel(), w.prompt.spec(), "promptable")
        w.state.prompts = w.prompt.prompts()
        w.attack.attack.setCurrentText("noise-gaussian")
        w.attack.steps.setValue(1)
        w.attack.run_button.click()
        return w.attack.runner, image, w
    if kind == "surface":
        patch(evaluate_jobs, "surface_rows", honour)
        ref = w.state.reference
        pred = viewer.add_labels(np.roll(np.asarray(ref.data), 2, axis=1), name="prediction",
                                 scale=ref.scale, translate=ref.translate)
        w.state.set_prediction("clean", pred)  # the Dice panel starts surface metrics
        return w.dice.surface_runner, pred, w
    raise SystemExit(f"unknown kind {kind!r}")


def serve_tiny(cache: str):
    """The local hub of tests/models/hub_server.py serving ``test-tiny``, the cache at
    ``cache`` (a small built-in network, downloaded 4 KiB a block)."""
    import os
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
    from hub_server import FakeHub, tiny_checkpoint, tiny_entry
    from huggingface_hub import constants

    from napari_segeval.models.catalogue import CATALOGUE

    data = tiny_checkpoint()
    entry = tiny_entry(data)
    CATALOGUE[entry.name] = entry
    hub = FakeHub(entry.repo_id, entry.revision, {entry.filename: data})
    os.environ.update(HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=cache)
    constants.DOWNLOAD_CHUNK_SIZE = 4096
    return hub


def start_download(w, cache: str):
    """Start the Prompt tab's download of ``test-tiny``, held at its first block (the gate
    of the download honours cancel: the close must cancel it mid-file)."""
    from napari_segeval._cancel import check_cancel
    from napari_segeval._widgets import model_picker

    serve_tiny(cache)
    real = model_picker.pull_model

    def held(name, *, progress=None, cancel=None):
        def report(done, total):
            progress(done, total)
            ENTERED.set()
            while not RELEASE.wait(0.01):
                check_cancel(cancel, "gated download")

        return real(name, progress=report, cancel=cancel)

    model_picker.pull_model = held
    picker = w.prompt.picker
    picker.fill()
    picker.choose("test-tiny")
    picker.download_button.click()
    return picker.runner


def main(kind: str, action: str, path: str | None = None) -> int:
    import napari
    from napari.utils.notifications import notification_manager

    viewer = napari.Viewer(show=True)
    sys.excepthook = record
    threading.excepthook = lambda args: record(args.exc_type, args.exc_value,
                                               args.exc_traceback)
    notification_manager.receive_error = record
    notes_from = len(notification_manager.records)
    honour = action != "delete"
    runner, layer, panel = setup(kind, viewer, honour, path)
    outcomes: list[str] = []
    runner.job_done.connect(lambda _name, outcome: outcomes.append(outcome))
    wait_until(ENTERED.is_set, "job entered")
    if kind == "download":
        from pathlib import Path

        PARTIAL.extend(p.name for p in Path(path).rglob("*.incomplete"))
    job = runner.job
    names_before = [ly.name for ly in viewer.layers]
    out: dict = {"kind": kind, "action": action}
    if action == "delete":
        viewer.layers.remove(layer)
        names_before.remove(layer.name)
        RELEASE.set()
        wait_until(lambda: not job.alive and not runner.running, "job ended")
        spin(0.3)
        out["layers_added"] = [ly.name for ly in viewer.layers if ly.name not in names_before]
        out["outcomes"] = outcomes
        out["status"] = runner.status.text()
    else:
        if action == "close":
            panel.window().close()  # what the window's close button does
        else:
            viewer.close()
        # a closed job was joined before `closed` reads True (or its join timed out)
        wait_until(lambda: job.closed or not job.alive, "job closed")
        out["joined"] = not job.alive
        spin(0.3)
        gc.collect()
        spin(0.3)
        out["outcomes"] = outcomes
    if kind == "download":  # what the cancelled download left in the cache
        from pathlib import Path

        out["left"] = sorted(str(p.relative_to(path)) for p in Path(path).rglob("*")
                             if p.is_file() and p.name != "CACHEDIR.TAG")
        out["partial_seen"] = PARTIAL
    out["notes"] = [str(n.message) for n in notification_manager.records[notes_from:]]
    out["errors"] = ERRORS
    RELEASE.set()
    print(json.dumps(out), flush=True)
    return 3 if ERRORS else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
