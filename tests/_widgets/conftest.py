"""Fixtures of the widget tests: small cases as napari layers, a shared ViewerState."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from napari_segeval._widgets._state import ViewerState


@pytest.fixture(autouse=True)
def _frozen_heap():
    """Freeze the objects alive before each test (modules, torch, napari, session fixtures).

    napari's canvas runs a full ``gc.collect()`` on every layer removal (a Windows OpenGL
    work-around); with torch and napari imported each pass walks millions of objects (about
    half a second here). Frozen objects are left out of those passes, which then walk only
    what the test itself made: the test's own layers and visuals are still collected as
    napari means them to be. Garbage left by earlier tests is collected before freezing.
    """
    import napari._qt.qt_viewer  # noqa: F401  (what every viewer imports: frozen too)
    import napari._vispy  # noqa: F401
    import torch  # noqa: F401

    gc.collect()
    gc.freeze()
    yield


@pytest.fixture
def small_case(make_napari_viewer):
    """A viewer with a (12, 32, 32) CT-like image, reference labels and a shifted prediction."""
    viewer = make_napari_viewer()
    image = np.full((12, 32, 32), -100, np.int16)
    ref = np.zeros((12, 32, 32), np.uint8)
    ref[3:9, 8:20, 8:20] = 1
    ref[4:7, 22:28, 22:28] = 2
    image[ref == 1] = 120
    image[ref == 2] = 200
    pred = np.zeros_like(ref)
    pred[3:9, 10:22, 8:20] = 1
    pred[4:7, 22:28, 22:28] = 2
    meta = {
        "geometry": {
            "spacing": [2.0, 1.0, 1.0],
            "origin": [0.0, 0.0, 0.0],
            "direction": [1, 0, 0, 0, 1, 0, 0, 0, 1],
        },
        "modality": "CT",
        "axes": "zyx",
    }
    img = viewer.add_image(image, name="ct", scale=(2.0, 1.0, 1.0), metadata=dict(meta))
    reference = viewer.add_labels(
        ref,
        name="ct reference",
        scale=(2.0, 1.0, 1.0),
        metadata={**meta, "structures": {1: "liver", 2: "spleen"}},
    )
    prediction = viewer.add_labels(pred, name="prediction", scale=(2.0, 1.0, 1.0))
    state = ViewerState()
    state.set_image(img)
    state.set_reference(reference)
    return viewer, state, prediction


@pytest.fixture
def ct_viewer(make_napari_viewer):
    """A viewer holding the bundled CT sample (image + reference) and the main widget."""
    from napari_segeval._sample_data import sample_ct
    from napari_segeval._widgets.main import SegEvalWidget

    viewer = make_napari_viewer()
    for data, kwargs, kind in sample_ct():
        getattr(viewer, f"add_{kind}")(data, **kwargs)
    widget = SegEvalWidget(viewer)
    widget.prompt.backend.setCurrentText("threshold (no weights)")
    widget.prompt.device.value = "cpu"
    return viewer, widget


def held_steps(release, n: int = 3, *, progress=None, cancel=None) -> int:
    """A job: report step 1 of ``n``, wait for ``release`` (or cancel), then finish the steps."""
    from napari_segeval._cancel import check_cancel

    progress(1, n)
    while not release.wait(0.01):
        check_cancel(cancel, "steps")
    for i in range(2, n + 1):
        check_cancel(cancel, "steps")
        progress(i, n)
    return n


def wait_job(qtbot, runner, timeout=60000):
    """Wait until ``runner`` has finished its job."""
    qtbot.waitUntil(lambda: not runner.running, timeout=timeout)


@pytest.fixture
def notifications():
    """Error notifications shown while the test runs (napari's notification manager)."""
    from napari.utils.notifications import notification_manager

    start = len(notification_manager.records)
    yield lambda: [str(n.message) for n in notification_manager.records[start:]]


@pytest.fixture(scope="session")
def box_only_weights(tmp_path_factory):
    """Built-in prompt weights of four input channels (format 1: boxes and masks, no
    clicks), small and random, in the shipped format."""
    import torch

    from napari_segeval.models._prompt_net import PromptUNet
    from napari_segeval.models.builtin_prompt import save_weights

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("box-only") / "box_only.pt"
    config = {"width": 4, "depth": 2, "size": 16, "in_channels": 4}
    save_weights(PromptUNet(width=4, depth=2, in_channels=4).eval(), path, config)
    return path
