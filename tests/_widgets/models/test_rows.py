"""The model picker's rows, states and cards, without Qt."""

from __future__ import annotations

from napari_segeval._widgets.models.rows import (
    PHANTOM_WARNING,
    card_html,
    catalogue_rows,
    row_state,
)
from napari_segeval.models import _cache
from napari_segeval.models.catalogue import BUILTIN_CARDS, CATALOGUE


def test_every_row_has_a_card_with_its_fields():
    for row in catalogue_rows():
        text = card_html(row)
        for field in ("Trained on", "Intended use", "Not for", "Licence"):
            assert f"<b>{field}</b>: " in text, (row.name, field)


def test_only_the_phantom_models_carry_the_warning():
    warned = {r.name for r in catalogue_rows() if PHANTOM_WARNING in card_html(r)}
    assert warned == {"builtin"}  # threshold has no training; the catalogue is real data
    assert "generated phantoms" in BUILTIN_CARDS["builtin"].trained_on


def test_a_row_is_here_once_its_file_is_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    row = next(r for r in catalogue_rows() if r.name == "sam2.1-small")
    assert row.entry is CATALOGUE["sam2.1-small"]
    assert row_state(row) == "sam2.1-small: not downloaded (184 MB)"
    path = _cache.snapshot_path(CATALOGUE["sam2.1-small"])
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x")
    assert row_state(row) == "sam2.1-small: here"
