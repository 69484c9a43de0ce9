"""Seeded k-fold splits, published splits and their file."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import ReadError
from napari_segeval.evaluation.layouts import CaseSpec
from napari_segeval.evaluation.splits import (
    ensure_folds,
    kfold_assignment,
    load_splits,
    save_splits,
)


def specs(n: int) -> list[CaseSpec]:
    return [CaseSpec(f"c{i:02d}", (f"c{i}.png",), f"m{i}.png") for i in range(n)]


def test_kfold_balanced_seeded_and_order_free():
    ids = [f"c{i}" for i in range(23)]
    a = kfold_assignment(ids, k=5, seed=3)
    assert sorted(np.bincount(list(a.values())).tolist()) == [4, 4, 5, 5, 5]
    assert a == kfold_assignment(ids[::-1], k=5, seed=3)
    assert a != kfold_assignment(ids, k=5, seed=4)
    with pytest.raises(ValueError):
        kfold_assignment(ids[:3], k=5)


def test_ensure_folds_saves_and_reuses(tmp_path):
    s = specs(7) + [CaseSpec("unlabelled", ("u.png",))]
    saved = ensure_folds(s, k=3, seed=0, output_dir=tmp_path)
    assert saved["source"] == "seeded k-fold" and saved["k"] == 3 and saved["seed"] == 0
    assert s[-1].fold is None and {x.fold for x in s[:-1]} == {0, 1, 2}
    again = specs(7)
    ensure_folds(again, k=5, seed=9, output_dir=tmp_path)  # resumed run keeps the file
    assert [x.fold for x in again] == [x.fold for x in s[:-1]]


def test_published_folds_are_kept(tmp_path):
    s = specs(4)
    for i, x in enumerate(s):
        x.fold = i % 2
    saved = ensure_folds(s, k=5, seed=0, output_dir=tmp_path)
    assert saved["source"] == "published splits file" and saved["k"] == 2
    assert saved["folds"] == {"c00": 0, "c01": 1, "c02": 0, "c03": 1}


def test_splits_file_roundtrip_and_bad_file(tmp_path):
    p = save_splits(tmp_path / "s.json", {"b": 1, "a": 0}, k=2, seed=1, source="x")
    assert load_splits(p)["folds"] == {"a": 0, "b": 1}
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ReadError, match="bad.json"):
        load_splits(tmp_path / "bad.json")
