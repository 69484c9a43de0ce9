"""Pulling catalogue checkpoints from a local hub (tests/models/hub_server.py), offline.

Each test serves a small random checkpoint made here as the file of a test catalogue
entry, with ``HF_ENDPOINT`` at the local hub and ``HF_HUB_CACHE`` in tmp_path.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for hub_server

from hub_server import files_in, serve, tiny_checkpoint, tiny_entry

from napari_segeval._cancel import Cancelled
from napari_segeval._errors import MissingDependencyError, ReadError, WriteError
from napari_segeval.models import _cache, _hub
from napari_segeval.models.catalogue import CATALOGUE, get

pytest.importorskip("huggingface_hub", reason="huggingface_hub (extra 'models') not installed")

DATA = tiny_checkpoint()
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "hub-cache"


@pytest.fixture
def hub(monkeypatch, cache):
    server = serve(monkeypatch, cache, tiny_entry(DATA), DATA)
    yield server
    server.close()


def _left(cache: Path) -> list[str]:
    """Files a failed pull may leave: none but huggingface_hub's CACHEDIR.TAG."""
    return [f for f in files_in(cache) if f != "CACHEDIR.TAG"]


def test_pull_downloads_checks_and_caches(hub, cache):
    seen = []
    got = _hub.pull("test-tiny", progress=lambda done, total: seen.append((done, total)))
    path = Path(got["path"])
    assert got["downloaded"] and not got["replaced"] and got["sha256"] == SHA
    assert path == cache / "models--segeval-test--tiny" / "snapshots" / hub.revision / "tiny.pt"
    assert path.read_bytes() == DATA and Path(path.resolve()).name == SHA  # blob named by hash
    assert seen[-1] == (len(DATA), len(DATA))
    assert hub.ranges() == [None]
    again = _hub.pull("TEST-TINY")  # any letter case; no second download
    assert not again["downloaded"] and again["path"] == got["path"] and hub.ranges() == [None]
    assert _cache.checkpoint("test-tiny") == path


def test_a_wrong_published_hash_is_refused_and_nothing_is_left(hub, cache):
    hub.published["tiny.pt"] = hashlib.sha256(b"other bytes").hexdigest()
    with pytest.raises(
        ReadError,
        match=r"tiny\.pt: downloaded SHA-256 \w+\.\.\. is not the "
        r"published \w+\.\.\.: refused and removed$",
    ):
        _hub.pull("test-tiny")
    assert _left(cache) == []
    assert not (cache / "models--segeval-test--tiny").exists()


def test_the_catalogues_hash_is_checked_before_any_byte(monkeypatch, cache):
    entry = tiny_entry(DATA, sha256="0" * 64)
    server = serve(monkeypatch, cache, entry, DATA)
    try:
        with pytest.raises(ReadError, match="the catalogue expects 000000000000...: refused"):
            _hub.pull("test-tiny")
        assert server.ranges() == [] and _left(cache) == []
    finally:
        server.close()


def test_an_interrupted_download_resumes_where_it_stopped(hub, cache, monkeypatch):
    from huggingface_hub import constants

    # huggingface_hub writes (and resumes from) whole blocks of this size (10 MiB)
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4096)
    cut = len(DATA) // 3
    hub.cut_after = cut
    got = _hub.pull("test-tiny")
    assert Path(got["path"]).read_bytes() == DATA and got["sha256"] == SHA
    first, second = hub.ranges()
    start = int(second.removeprefix("bytes=").rstrip("-"))
    assert first is None and 0 < start <= cut and start % 4096 == 0  # resumed, not restarted


def test_a_truncated_download_is_refused_and_nothing_is_left(hub, cache):
    hub.files["tiny.pt"] = DATA[:-100]  # the CDN serves a short file, the hub lists the whole
    with pytest.raises(
        ReadError,
        match=r"tiny\.pt: the download did not complete \(OSError: "
        r"Consistency check failed.*\): nothing was kept; run "
        r"segeval models pull test-tiny again$",
    ):
        _hub.pull("test-tiny")
    assert _left(cache) == []


@pytest.mark.parametrize("stop", [Cancelled, KeyboardInterrupt])
def test_cancel_and_ctrl_c_leave_nothing_in_the_cache(hub, cache, stop, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4096)  # many blocks: stop mid-way
    event, seen = threading.Event(), []

    def progress(done, total):
        seen.append(done)
        if stop is Cancelled:
            event.set()  # the next block's check raises Cancelled
        else:
            raise KeyboardInterrupt

    with pytest.raises(stop):
        _hub.pull("test-tiny", progress=progress, cancel=event)
    assert seen == [4096]  # stopped in the middle of the download
    assert _left(cache) == []


def test_offline_says_which_file_to_fetch_and_where(hub, cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(_hub.HubUnavailable) as info:
        _hub.pull("test-tiny")
    text = str(info.value)
    assert "\n" not in text and text.startswith(
        f"offline (HF_HUB_OFFLINE is set): fetch {hub.endpoint}/segeval-test/tiny/resolve/"
    )
    assert "pass it with --model builtin --checkpoint FILE" in text
    assert hub.requests == [] and _left(cache) == []


def test_offline_with_a_known_hash_names_the_place_and_accepts_a_file_put_there(monkeypatch, cache):
    entry = tiny_entry(DATA, sha256=SHA)
    server = serve(monkeypatch, cache, entry, DATA)
    server.close()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    where = _cache.snapshot_path(entry)
    with pytest.raises(
        _hub.HubUnavailable, match=f"put it at {where} .checked against SHA-256 {SHA}.$"
    ):
        _hub.pull("test-tiny")
    where.parent.mkdir(parents=True)
    where.write_bytes(DATA[:-10])  # a truncated copy is refused...
    with pytest.raises(ReadError, match="truncated or altered"):
        _cache.checkpoint("test-tiny")
    where.write_bytes(DATA)  # ...the right one is used
    assert _cache.checkpoint("test-tiny") == where


@pytest.mark.parametrize(
    "how, line",
    [
        ("block", r"cannot reach the model hub at http://127\.0\.0\.1:\d+ \(HTTP 403\): fetch "),
        (
            "not_a_hub",
            (
                r"does not answer as a Hugging Face hub \(no X-Repo-Commit header; a "
                r"proxy in the way\?\): fetch "
            ),
        ),
    ],
)
def test_a_proxy_that_blocks_the_hub_gives_one_line(hub, cache, how, line):
    if how == "block":
        hub.block = 403
    else:
        hub.not_a_hub = True
    with pytest.raises(_hub.HubUnavailable, match=line) as info:
        _hub.pull("test-tiny")
    assert "\n" not in str(info.value) and _left(cache) == []


def test_nothing_listening_gives_one_line(hub, cache, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(
        _hub.HubUnavailable,
        match=r"cannot reach the model hub at "
        r"http://127\.0\.0\.1:9 \(\w+",
    ):
        _hub.pull("test-tiny")
    assert _left(cache) == []


def test_a_file_the_hub_does_not_have(monkeypatch, cache):
    entry = replace(tiny_entry(DATA), filename="missing.pt")
    server = serve(monkeypatch, cache, entry, DATA)
    server.files = {"tiny.pt": DATA}
    try:
        with pytest.raises(
            ReadError,
            match=r"missing\.pt: the hub has no such file "
            r"\(\w*EntryNotFoundError, HTTP 404\)",
        ):
            _hub.pull("test-tiny")
    finally:
        server.close()


def test_a_cache_without_links_is_checked_against_the_recorded_hash(hub, cache):
    path = Path(_hub.pull("test-tiny")["path"])
    assert _cache.record_path(CATALOGUE["test-tiny"]).read_text().strip() == SHA
    blob = path.resolve()
    path.unlink()
    blob.rename(path)  # what huggingface_hub does where links cannot be made
    _cache.VERIFIED.clear()
    assert _cache.checkpoint("test-tiny") == path
    path.write_bytes(DATA[:100])
    with pytest.raises(ReadError, match="truncated or altered"):
        _cache.checkpoint("test-tiny")


def test_a_damaged_cached_file_fails_its_check_and_pull_replaces_it(hub, cache):
    path = Path(_hub.pull("test-tiny")["path"])
    _cache.VERIFIED.clear()
    blob = path.resolve()
    blob.write_bytes(DATA[: len(DATA) // 2])
    with pytest.raises(
        ReadError,
        match=r"tiny\.pt: SHA-256 \w+\.\.\. is not the published "
        rf"{SHA[:12]}\.\.\. of tiny\.pt .* truncated or altered\): "
        r"run segeval models pull test-tiny to replace it$",
    ):
        _cache.checkpoint("test-tiny")
    again = _hub.pull("test-tiny")
    assert again["replaced"] and again["downloaded"] and path.read_bytes() == DATA
    assert _cache.checkpoint("test-tiny") == path


def test_a_cache_that_cannot_be_written_or_is_full(hub, cache, monkeypatch):
    import os
    import shutil

    real_access = os.access
    monkeypatch.setattr(
        _hub.os,
        "access",
        lambda p, mode: False if Path(p) == cache.parent else real_access(p, mode),
    )  # as a read-only folder (root ignores chmod)
    with pytest.raises(WriteError, match=f"{cache}: the model cache is not writable"):
        _hub.pull("test-tiny")
    monkeypatch.setattr(_hub.os, "access", real_access)
    usage = shutil.disk_usage(cache.parent)
    monkeypatch.setattr(_hub.shutil, "disk_usage", lambda p: usage._replace(free=1000))
    with pytest.raises(WriteError, match=r"has 0\.0 MB free, \d+ MB are needed"):
        _hub.pull("test-tiny")
    assert hub.requests == [] and _left(cache) == []


@pytest.mark.skipif(
    sys.platform == "win32"
    or not hasattr(__import__("os"), "geteuid")
    or __import__("os").geteuid() == 0,
    reason="root writes read-only folders",
)
def test_a_read_only_cache_folder(hub, cache):
    cache.mkdir()
    cache.chmod(0o555)
    try:
        with pytest.raises(WriteError, match="not writable"):
            _hub.pull("test-tiny")
    finally:
        cache.chmod(0o755)
    assert _left(cache) == []


def test_not_pulled_and_unknown_names(hub):
    with pytest.raises(Exception, match=r"test-tiny is not here: segeval models pull test-tiny"):
        _cache.checkpoint("test-tiny")
    with pytest.raises(Exception, match=r"unknown model 'sam2\.1-tinny' \(closest: sam2\.1-tiny"):
        _hub.pull("sam2.1-tinny")
    with pytest.raises(Exception, match="builtin ships with napari-segeval: nothing to pull"):
        _hub.pull("builtin")


def test_without_huggingface_hub(hub, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(MissingDependencyError, match=r"napari-segeval\[models\]"):
        _hub.pull("test-tiny")


def test_published_twin_names_a_known_file_by_size_and_hash(monkeypatch, tmp_path):
    monkeypatch.setitem(CATALOGUE, "twin", replace(tiny_entry(DATA, SHA), name="twin"))
    (tmp_path / "a.pt").write_bytes(DATA)
    (tmp_path / "b.pt").write_bytes(DATA[::-1])
    assert _cache.published_twin(tmp_path / "a.pt").name == "twin"
    assert _cache.published_twin(tmp_path / "b.pt") is None  # same size, other bytes
    assert _cache.published_twin(tmp_path / "nope.pt") is None


def test_catalogue_and_hub_import_nothing_heavy_and_download_nothing():
    code = (
        "import sys, napari_segeval.models.catalogue, napari_segeval.models._hub, "
        "napari_segeval.models.registry, napari_segeval.cli._models;"
        "print(sorted(m for m in ('torch', 'huggingface_hub', 'sam2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_entry_is_pinned_and_described():
    for entry in CATALOGUE.values():
        assert len(entry.revision) == 40 and int(entry.revision, 16) >= 0
        assert entry.card.trained_on and entry.card.intended_use and entry.card.licence
        assert entry.source.startswith("https://") and entry.size > 0
        assert get(entry.name) is entry
    assert CATALOGUE["MedSAM2_latest"].architecture == "medsam2"
    assert {e.architecture for e in CATALOGUE.values() if e.kind == "SAM2.1"} == {
        "sam2.1-tiny",
        "sam2.1-small",
        "sam2.1-base-plus",
        "sam2.1-large",
    }
