from __future__ import annotations

from pathlib import Path

from napari_segeval._paths import user_cache


def test_user_cache_is_under_xdg_cache_home(monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "/c")
    assert user_cache("litemedsam").as_posix() == "/c/napari-segeval/litemedsam"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache("x") == Path.home() / ".cache" / "napari-segeval" / "x"
