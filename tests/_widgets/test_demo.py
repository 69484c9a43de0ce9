"""The demo workflow (``segeval demo``) with the weight-free backend and a quick attack."""

from __future__ import annotations

import argparse

import pytest

from napari_segeval._widgets.demo import DemoRun
from napari_segeval.cli import _demo


@pytest.mark.slow
def test_demo_fills_the_panel(make_napari_viewer, qtbot):
    viewer = make_napari_viewer()
    demo = DemoRun(viewer, backend="threshold", device="cpu", attack="fgsm", eps=0.1)
    assert demo.box.label == 1 and "boxes" in viewer.layers
    demo.start()
    qtbot.waitUntil(lambda: demo.settled, timeout=60000)
    assert demo.error is None
    w = demo.widget
    assert w.state.predictions["clean"] is not None
    assert w.state.predictions["attacked"] is not None
    assert w.tabs.currentWidget() is w.dice
    assert w.dice.current_slice() == demo.box.index
    assert w.dice.cell(1, "HD95 mm clean") not in ("...", "")
    assert demo.case.state is w.state  # both panels docked, one shared state
    assert demo.case.state.image is w.state.image
    assert "1: liver" in demo.case.fields["structures"].text()


@pytest.mark.slow
def test_demo_correct_ends_on_the_corrected_slice(make_napari_viewer, qtbot):
    import numpy as np

    from napari_segeval.metrics import overlap_metrics

    viewer = make_napari_viewer()
    demo = DemoRun(viewer, backend="threshold", device="cpu", correct=True)
    assert demo.attack_name is None
    demo.start()
    qtbot.waitUntil(lambda: demo.settled, timeout=60000)
    assert demo.error is None
    w = demo.widget
    prompt = demo.correction
    assert prompt is not None and prompt.label == 1  # a click: the threshold model takes them
    assert w.prompt.tools.prompts()[1].prompts[-1] == prompt
    assert w.tabs.currentWidget() is w.prompt
    assert w.dice.current_slice() == prompt.index
    assert w.prompt.jobs.session.last_propagated == [1]
    before, after = w.prompt.jobs.changes[1]
    ref, pred = w.state.reference.data, w.state.predictions["clean"].data
    assert after == overlap_metrics(np.asarray(ref), np.asarray(pred), labels=[1])[1]["dice"]
    assert after > before
    assert f"{before:.3f} → {after:.3f}" in w.prompt.tools.status.text()


def test_demo_reports_a_failed_step(make_napari_viewer, qtbot, tmp_path):
    viewer = make_napari_viewer()
    demo = DemoRun(viewer, backend="threshold", device="cpu", attack=None)
    demo.widget.prompt.backend.setCurrentText("MedSAM2 checkpoint")  # no checkpoint given
    demo.start()
    qtbot.waitUntil(lambda: demo.finished, timeout=30000)
    assert "checkpoint" in demo.error


def test_cli_demo_refuses_to_overwrite(tmp_path, monkeypatch):
    from napari_segeval._errors import WriteError

    out = tmp_path / "shot.png"
    out.write_bytes(b"x")
    monkeypatch.setenv("DISPLAY", ":0")
    parser = argparse.ArgumentParser()
    _demo.add_parser(parser.add_subparsers())
    args = parser.parse_args(["demo", "--screenshot", str(out)])
    with pytest.raises(WriteError, match="exists"):
        args.func(args)
