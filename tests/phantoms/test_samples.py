from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from napari_segeval._errors import ReadError
from napari_segeval._paths import user_cache
from napari_segeval.phantoms import samples
from napari_segeval.phantoms.samples import ENV_VAR, sample_info, sample_path, sample_root


def test_env_var_wins(tmp_path, monkeypatch):
    (tmp_path / "index.json").write_text(json.dumps({"x": {"image": "a.png"}, "f": "dir"}))
    (tmp_path / "a.png").write_bytes(b"")
    (tmp_path / "dir").mkdir()
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert sample_root() == tmp_path
    assert sample_path("x") == tmp_path / "a.png"
    assert sample_path("f") == tmp_path / "dir"
    with pytest.raises(KeyError, match="labels"):
        sample_path("x", "labels")
    with pytest.raises(KeyError, match="available"):
        sample_path("nope")


def test_env_var_without_index_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(ReadError, match="index.json"):
        sample_root()


def test_missing_listed_file_is_a_read_error(tmp_path, monkeypatch):
    (tmp_path / "index.json").write_text(json.dumps({"x": {"image": "gone.png"}}))
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(ReadError, match="gone.png"):
        sample_path("x")


def test_repo_samples_found_without_env(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    root = sample_root()
    assert root == Path(samples.__file__).resolve().parents[2] / "sample_data"
    assert sample_path("ct", "labels").name == "ct_001_labels.nii.gz"
    assert sample_info("polyp")["color_table"]["1"] == [255, 0, 0]


def test_cache_generated_once_atomically(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(samples, "_repo_samples", lambda: tmp_path / "no-repo")
    from napari_segeval.phantoms import make_samples

    calls = []

    def fake_write(out, video=True):
        calls.append(out)
        (Path(out) / "index.json").write_text("{}")

    monkeypatch.setattr(make_samples, "write_samples", fake_write)
    first = sample_root()
    assert (first / "index.json").is_file() and first.is_relative_to(tmp_path)
    assert sample_root() == first and len(calls) == 1
    assert first.name == f"samples-v{samples.SAMPLES_VERSION}" and calls[0] != first
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temp left over


def test_import_does_not_pull_heavy_modules():
    code = (
        "import sys, napari_segeval.phantoms.samples, napari_segeval.phantoms;"
        "bad = [m for m in ('torch', 'napari', 'qtpy', 'PyQt5', 'SimpleITK', 'av') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def _fake_cache(tmp_path, monkeypatch, have_av: list[bool]):
    """A user cache whose generator writes a 'video' entry only when PyAV is there."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(samples, "_repo_samples", lambda: tmp_path / "no-repo")
    monkeypatch.setattr(samples, "_can_write_video", lambda: have_av[0])
    from napari_segeval.phantoms import make_samples

    calls = []

    def fake_write(out, video=True):
        calls.append(video)
        (Path(out) / "ct.png").write_bytes(b"")
        index = {"ct": {"image": "ct.png"}}
        if video:
            (Path(out) / "v.mp4").write_bytes(b"")
            index["video"] = {"image": "v.mp4"}
        (Path(out) / "index.json").write_text(json.dumps(index))

    monkeypatch.setattr(make_samples, "write_samples", fake_write)
    return calls


def test_a_sample_that_needs_a_missing_extra_says_so(tmp_path, monkeypatch):
    from napari_segeval import MissingDependencyError

    _fake_cache(tmp_path, monkeypatch, [False])
    assert sample_path("ct").name == "ct.png"
    with pytest.raises(MissingDependencyError, match=r"pip install 'napari-segeval\[video\]'"):
        sample_path("video")
    with pytest.raises(MissingDependencyError, match="needs the optional package 'av'"):
        sample_info("video")


def test_the_cache_is_rebuilt_when_the_video_extra_arrives(tmp_path, monkeypatch):
    have_av = [False]
    calls = _fake_cache(tmp_path, monkeypatch, have_av)
    first = sample_root()
    assert calls == [False] and sample_root() == first and calls == [False]
    have_av[0] = True  # pip install 'napari-segeval[video]'
    assert sample_root() == first and calls == [False, True]
    assert sample_path("video").name == "v.mp4"
    assert sample_root() == first and calls == [False, True]  # built with it now: kept
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # nothing left aside


def test_a_cache_from_before_the_record_is_judged_by_its_index(tmp_path, monkeypatch):
    calls = _fake_cache(tmp_path, monkeypatch, [True])
    cache = user_cache(f"samples-v{samples.SAMPLES_VERSION}")
    cache.mkdir(parents=True)
    (cache / "index.json").write_text(json.dumps({"video": {"image": "v.mp4"}}))
    assert sample_root() == cache and calls == []  # it has the video: not rebuilt
