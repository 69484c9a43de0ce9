"""Napari sessions that close the viewer, or delete a layer, while a panel's job runs.

Run as a script by ``test_lifecycle.py`` (a crash must fail those tests, not
kill pytest)::

    python _midjob.py KIND:ACTION[:PATH] [KIND:ACTION[:PATH] ...]

Each argument is a scenario; they run one after the other in this process, each
in a new viewer that is closed before the next starts. ``KIND`` is the job:
``propagate``, ``repropagate`` (a correction after a first propagation),
``segment`` (``PATH``: dense weights), ``attack``, ``surface``, ``results``
(``PATH``: a results folder), ``uncertainty`` or ``download`` (the Prompt tab's
model picker downloads ``test-tiny`` from the local hub of
tests/models/hub_server.py into the cache folder ``PATH``, held after its first
block). ``ACTION`` is ``close`` (the window closes as when a person clicks its
close button), ``viewer-close`` (:meth:`napari.Viewer.close`) or ``delete`` (the
layer the job reads is deleted).

Mid-job is made deterministic with a gate: the panel's job function is
replaced by one that reports progress, says it entered, and waits for a release
before calling the real function. For ``close`` the gate honours cancel (the
job must be cancelled and its thread joined by the close itself); for
``delete`` it does not, and the real function runs to its end after the layer
is gone (the result must be dropped with a notification). A scenario's
replacements are undone before the next scenario starts.

Standard output, one JSON object a line: ``{"start": "KIND:ACTION"}`` when a
scenario starts (so that a crash can be put down to the scenario that was
running), then the scenario's report (``kind``, ``action``, what happened and
the ``errors`` that reached an exception hook during it), and at the end
``{"end": true, "errors": [...]}`` (errors after the last scenario). The exit
status is 0, 3 when an error reached an exception hook, 4 when a scenario got
stuck (its last line is then ``{"stuck": ..., "scenario": ...}``).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np

ERRORS: list[str] = []  # errors of the scenario running (moved to its report at its end)
STUCK_S = 300  # a hung session ends with status 4 instead of hanging the test
CURRENT = {"scenario": None}


def record(*exc) -> None:
    ERRORS.append("".join(traceback.format_exception(*exc[:3]))[-2000:])


def emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def wait_until(cond, what: str) -> None:
    from qtpy.QtWidgets import QApplication

    end = time.monotonic() + STUCK_S
    while not cond():
        QApplication.processEvents()
        time.sleep(0.01)
        if time.monotonic() > end:
            emit({"stuck": what, "scenario": CURRENT["scenario"], "errors": ERRORS})
            sys.stdout.flush()
            os._exit(4)


def spin(seconds: float) -> None:
    """Run the event loop for ``seconds`` (late reports of a job arrive here)."""
    end = time.monotonic() + seconds
    wait_until(lambda: time.monotonic() > end, "spin")


class Gate:
    """A scenario's gate (see the module) and the replacements it made, undone by :meth:`undo`."""

    def __init__(self, honour_cancel: bool) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.honour = honour_cancel
        self.undos: list = []

    def wrap(self, fn):
        """``fn`` behind the gate: report, say it entered, wait for the release."""
        from napari_segeval._cancel import check_cancel

        entered, release, honour = self.entered, self.release, self.honour

        def gated(*args, progress=None, cancel=None, **kwargs):
            progress(0, 1)
            entered.set()
            while not release.wait(0.01):
                if honour:
                    check_cancel(cancel, "gated job")
            return fn(*args, progress=progress, cancel=cancel if honour else None, **kwargs)

        return gated

    def replace(self, obj, name: str, value) -> None:
        """Set ``obj.name`` to ``value`` until :meth:`undo`."""
        old = getattr(obj, name)
        self.undos.append(lambda: setattr(obj, name, old))
        setattr(obj, name, value)

    def patch(self, module, name: str) -> None:
        self.replace(module, name, self.wrap(getattr(module, name)))

    def undo(self) -> None:
        self.release.set()
        for fn in reversed(self.undos):
            fn()
        self.undos.clear()


#: The part of the CT sample (40 x 112 x 112) a session shows: 12 slices and 64 x 64 pixels
#: around the liver's middle (every structure's job is as in the whole sample, on a tenth of
#: its voxels: the jobs that run to their end after a deletion run a tenth as long).
CROP = (slice(19, 31), slice(24, 88), slice(16, 80))


def ct_session(viewer):
    """A crop of the CT sample (:data:`CROP`, at its place in the world) and the Evaluate
    panel docked, threshold model, liver box drawn."""
    from napari_segeval._sample_data import sample_ct
    from napari_segeval._widgets.main import SegEvalWidget

    start = np.array([s.start for s in CROP])
    for data, kwargs, kind in sample_ct():
        kwargs["translate"] = tuple(np.add(kwargs["translate"], start * kwargs["scale"]))
        getattr(viewer, f"add_{kind}")(np.ascontiguousarray(data[CROP]), **kwargs)
    w = SegEvalWidget(viewer)
    viewer.window.add_dock_widget(w, name="Evaluate", area="right")
    w.prompt.backend.setCurrentText("threshold (no weights)")
    w.prompt.device.value = "cpu"
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    return w


def setup(kind: str, viewer, gate: Gate, path: str | None):
    """Start the job of ``kind``; returns (runner, the layer it reads, panel)."""
    from napari_segeval._widgets.evaluate import attack, segment
    from napari_segeval._widgets.jobs import tasks
    from napari_segeval._widgets.prompt import panel as prompt_panel
    from napari_segeval._widgets.prompt import run as prompt_run
    from napari_segeval._widgets.results import panel as results_panel
    from napari_segeval.models.threshold import ThresholdPromptModel

    if kind == "results":
        from napari_segeval._widgets.demo import show_results

        panel = show_results(viewer, path)  # opens the folder and shows its worst row
        wait_until(
            lambda: (
                panel.loaded is not None
                and not panel.runner.running
                and not panel.evaluate.dice.surface_runner.running
                and not panel.evaluate.dice.surface_timer.isActive()
            ),
            "results shown",
        )
        gate.patch(results_panel, "row_job")
        rows = panel.visible_rows()
        other = next(
            i
            for i, r in enumerate(rows)
            if r["case"] == rows[0]["case"] and r["structure"] != panel.row["structure"]
        )
        panel.select_row(other)  # the case shown: the job reads its layers
        return panel.runner, panel.layers.layers["image"], panel
    w = ct_session(viewer)
    image = w.state.image
    if kind == "download":
        return start_download(w, path, gate), image, w
    if kind == "propagate":
        gate.patch(prompt_run, "propagate_session")
        w.prompt.run_button.click()
        return w.prompt.runner, image, w
    if kind == "repropagate":
        w.prompt.run()  # the first propagation runs to its end
        wait_until(lambda: not w.prompt.runner.running, "first propagation")
        box = w.prompt.tools.prompts()[1].prompts[0]
        w.prompt.tools.start_points(False).add([box.index + 2, box.y0 + 2, box.x0 + 2])
        wait_until(lambda: w.prompt.tools.list.count() == 2, "the click listed")
        gate.patch(prompt_run, "propagate_session")
        w.prompt.tools.buttons["repropagate"].click()
        return w.prompt.runner, image, w
    if kind == "uncertainty":
        gate.patch(prompt_panel, "uncertainty")
        w.prompt.samples.value = 2
        w.prompt.uncertainty_button.click()
        return w.prompt.runner, image, w
    if kind == "segment":
        gate.patch(segment, "segment_dense")
        w.segment.source.value = "U-Net weights file"
        w.segment.path.value = path
        w.segment.device.value = "cpu"
        w.segment.run_button.click()
        return w.segment.runner, image, w
    if kind == "attack":
        gate.patch(attack, "attack")
        w.state.set_model(ThresholdPromptModel(), w.prompt.spec(), "promptable")
        w.state.prompts = w.prompt.tools.prompts()
        w.attack.attack.value = "noise-gaussian"
        w.attack.steps.value = 1
        w.attack.run_button.click()
        return w.attack.runner, image, w
    if kind == "surface":
        gate.patch(tasks, "surface_rows")
        ref = w.state.reference
        pred = viewer.add_labels(
            np.roll(np.asarray(ref.data), 2, axis=1),
            name="prediction",
            scale=ref.scale,
            translate=ref.translate,
        )
        w.state.set_prediction("clean", pred)  # the Dice panel starts surface metrics
        return w.dice.surface_runner, pred, w
    raise SystemExit(f"unknown kind {kind!r}")


def serve_tiny(cache: str, gate: Gate):
    """The local hub of tests/models/hub_server.py serving ``test-tiny``, the cache at
    ``cache`` (a small built-in network, downloaded 4 KiB a block), until ``gate.undo()``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
    from hub_server import FakeHub, tiny_checkpoint, tiny_entry
    from huggingface_hub import constants

    from napari_segeval.models.catalogue import CATALOGUE

    data = tiny_checkpoint()
    entry = tiny_entry(data)
    hub = FakeHub(entry.repo_id, entry.revision, {entry.filename: data})
    env = {k: os.environ.get(k) for k in ("HF_ENDPOINT", "HF_HUB_CACHE")}
    gate.undos.append(
        lambda: [
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            for k, v in env.items()
        ]
    )
    gate.undos.append(lambda: CATALOGUE.pop(entry.name, None))
    gate.undos.append(hub.close)
    CATALOGUE[entry.name] = entry
    os.environ.update(HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=cache)
    gate.replace(constants, "DOWNLOAD_CHUNK_SIZE", 4096)
    return hub


def start_download(w, cache: str, gate: Gate):
    """Start the Prompt tab's download of ``test-tiny``, held at its first block (the gate
    of the download honours cancel: the close must cancel it mid-file)."""
    from napari_segeval._cancel import check_cancel
    from napari_segeval._widgets.models import picker as model_picker

    serve_tiny(cache, gate)
    real = model_picker.pull
    entered, release = gate.entered, gate.release

    def held(name, *, progress=None, cancel=None):
        def report(done, total):
            progress(done, total)
            entered.set()
            while not release.wait(0.01):
                check_cancel(cancel, "gated download")

        return real(name, progress=report, cancel=cancel)

    gate.replace(model_picker, "pull", held)
    picker = w.prompt.picker
    picker.fill()
    picker.choose("test-tiny")
    picker.download_button.click()
    return picker.runner


def scenario(kind: str, action: str, path: str | None) -> dict:
    """Run one scenario in a new viewer; its report (the viewer is closed at its end)."""
    import napari
    from napari.utils.notifications import notification_manager

    viewer = napari.Viewer(show=True)
    notes_from = len(notification_manager.records)
    gate = Gate(honour_cancel=action != "delete")
    partial: list[str] = []  # the download's partial files when the session acted
    try:
        runner, layer, panel = setup(kind, viewer, gate, path)
        outcomes: list[str] = []
        runner.job_done.connect(lambda _name, outcome: outcomes.append(outcome))
        wait_until(gate.entered.is_set, "job entered")
        if kind == "download":
            partial.extend(p.name for p in Path(path).rglob("*.incomplete"))
        job = runner.job
        names_before = [ly.name for ly in viewer.layers]
        out: dict = {"kind": kind, "action": action}
        if action == "delete":
            viewer.layers.remove(layer)
            names_before.remove(layer.name)
            gate.release.set()
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
            out["left"] = sorted(
                str(p.relative_to(path))
                for p in Path(path).rglob("*")
                if p.is_file() and p.name != "CACHEDIR.TAG"
            )
            out["partial_seen"] = partial
        out["notes"] = [str(n.message) for n in notification_manager.records[notes_from:]]
    finally:
        gate.undo()
    if action == "delete":  # the next scenario gets a viewer of its own
        viewer.close()
    spin(0.1)
    return out


def main(scenarios: list[str]) -> int:
    sys.excepthook = record
    threading.excepthook = lambda args: record(args.exc_type, args.exc_value, args.exc_traceback)
    from napari.utils.notifications import notification_manager

    notification_manager.receive_error = record
    # napari's canvas runs a full gc.collect() on every batch of layer removals; freeze
    # what every scenario shares (napari, Qt, torch, the package) so that those passes,
    # and the explicit ones below, walk only the scenario's own objects.
    import napari._qt.qt_viewer  # noqa: F401
    import napari._vispy  # noqa: F401
    import torch  # noqa: F401

    import napari_segeval._widgets.main  # noqa: F401

    gc.collect()
    gc.freeze()
    failed = False
    for spec in scenarios:
        kind, action, *rest = spec.split(":", 2)
        CURRENT["scenario"] = f"{kind}:{action}"
        emit({"start": CURRENT["scenario"]})
        t0 = time.monotonic()
        try:
            out = scenario(kind, action, rest[0] if rest else None)
        except Exception:  # this scenario fails; the next ones still run
            record(*sys.exc_info())
            out = {"kind": kind, "action": action}
        out["errors"] = list(ERRORS)
        out["seconds"] = round(time.monotonic() - t0, 2)
        failed = failed or bool(ERRORS)
        ERRORS.clear()
        emit(out)
    CURRENT["scenario"] = None
    spin(0.1)
    emit({"end": True, "errors": list(ERRORS)})
    return 3 if failed or ERRORS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
