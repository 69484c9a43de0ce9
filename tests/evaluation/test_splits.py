"""Seeded k-fold splits, published splits and their file."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import ReadError
from napari_segeval.evaluation.layouts import CaseSpec
from napari_segeval.evaluation.splits import (
    ensure_folds,
    grouped_kfold_assignment,
    load_splits,
    save_splits,
)


def specs(n: int) -> list[CaseSpec]:
    return [CaseSpec(f"c{i:02d}", (f"c{i}.png",), f"m{i}.png") for i in range(n)]


def test_kfold_balanced_seeded_and_order_free():
    ids = [f"c{i}" for i in range(23)]
    a = grouped_kfold_assignment({c: c for c in ids}, k=5, seed=3)
    assert sorted(np.bincount(list(a.values())).tolist()) == [4, 4, 5, 5, 5]
    assert a == grouped_kfold_assignment({c: c for c in ids[::-1]}, k=5, seed=3)
    assert a != grouped_kfold_assignment({c: c for c in ids}, k=5, seed=4)
    with pytest.raises(ValueError):
        grouped_kfold_assignment({c: c for c in ids[:3]}, k=5)


def test_ensure_folds_saves_and_reuses(tmp_path):
    s = specs(7) + [CaseSpec("unlabelled", ("u.png",))]
    saved = ensure_folds(s, k=3, seed=0, output_dir=tmp_path)
    assert (
        saved["source"] == "seeded k-fold grouped by patient"
        and saved["k"] == 3
        and saved["seed"] == 0
    )
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


def touch(root, *names):
    for n in names:
        p = root / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")


def camus_folder(root, n_patients: int):
    for i in range(1, n_patients + 1):
        pid = f"patient{i:04d}"
        for view in ("2CH", "4CH"):
            for part in ("ED", "ES", "half_sequence"):
                touch(
                    root,
                    f"{pid}/{pid}_{view}_{part}.nii.gz",
                    f"{pid}/{pid}_{view}_{part}_gt.nii.gz",
                )
    return root


@pytest.mark.parametrize("mode, per_patient", [("frames", 4), ("all", 6)])
def test_camus_patient_never_in_two_folds(tmp_path, mode, per_patient):
    from napari_segeval.evaluation.layouts import load_layout

    specs = load_layout(camus_folder(tmp_path / "camus", 13), camus_mode=mode)
    saved = ensure_folds(specs, k=5, seed=0, output_dir=tmp_path)
    assert saved["source"] == "seeded k-fold grouped by patient"
    fold_of: dict[str, set] = {}
    for s in specs:
        fold_of.setdefault(s.meta["patient"], set()).add(s.fold)
        assert saved["groups"][s.case_id] == s.meta["patient"]
    assert len(fold_of) == 13 and all(len(f) == 1 for f in fold_of.values())
    sizes = sorted(np.bincount([s.fold for s in specs]).tolist())
    assert sizes == [2 * per_patient] * 2 + [3 * per_patient] * 3  # 13 patients over 5 folds
    assert saved["groups_across_folds"] == []


def test_grouped_folds_property_random_groups():
    """No group in two folds, every case placed, balanced within the largest group, order-free."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(st.integers(0, 30), min_size=1, max_size=120),
        st.integers(2, 7),
        st.integers(0, 2**31 - 1),
    )
    def check(group_of_case, k, seed):
        groups = {f"c{i}": f"g{g}" for i, g in enumerate(group_of_case)}
        n_groups = len(set(groups.values()))
        if n_groups < k:
            with pytest.raises(ValueError):
                grouped_kfold_assignment(groups, k, seed)
            return
        folds = grouped_kfold_assignment(groups, k, seed)
        assert set(folds) == set(groups) and set(folds.values()) <= set(range(k))
        by_group: dict[str, set] = {}
        for c, g in groups.items():
            by_group.setdefault(g, set()).add(folds[c])
        assert all(len(f) == 1 for f in by_group.values())
        sizes = np.bincount(list(folds.values()), minlength=k)
        largest = max(np.bincount([int(g[1:]) for g in groups.values()]))
        assert sizes.max() - sizes.min() <= largest and sizes.min() > 0
        assert folds == grouped_kfold_assignment(dict(reversed(list(groups.items()))), k, seed)

    check()


def test_singleton_groups_give_the_image_level_kfold():
    ids = [f"c{i}" for i in range(23)]
    order = np.random.default_rng(3).permutation(len(ids))
    round_robin = {sorted(ids)[j]: i % 5 for i, j in enumerate(order)}
    assert grouped_kfold_assignment({c: c for c in ids}, 5, 3) == round_robin


def test_published_split_that_splits_a_patient_is_kept_and_reported(tmp_path):
    s = specs(4)
    for i, x in enumerate(s):
        x.fold, x.group = i % 2, "p1" if i < 2 else f"p{i}"
    saved = ensure_folds(s, k=5, seed=0, output_dir=tmp_path)
    assert saved["source"] == "published splits file" and saved["groups_across_folds"] == ["p1"]


def test_cv_splits_and_holdout_choose_the_cross_validated_cases(tmp_path):
    from napari_segeval._errors import SegEvalError
    from napari_segeval.evaluation.splits import in_cross_validation

    s = []
    for split, n in (("train", 6), ("val", 2), ("test", 3)):
        s += [
            CaseSpec(f"{split}{i}", ("x.png",), "m.png", layout="isic", split=split)
            for i in range(n)
        ]
    s[-1].fold = 1  # a fold set on a case outside the folds is dropped
    for sub in "abcd":
        (tmp_path / sub).mkdir()
    ensure_folds(
        s, k=3, seed=0, output_dir=tmp_path / "a", cv_splits={"isic": ["train"]}, holdout="test"
    )
    assert [x.fold is not None for x in s] == [True] * 6 + [False] * 5
    other = CaseSpec("o", ("x.png",), "m.png", layout="camus", split="val")
    assert in_cross_validation(other, {"isic": ["train"]})  # other layouts keep every split
    ensure_folds(s, k=3, seed=0, output_dir=tmp_path / "b", holdout="test")
    assert [x.fold is not None for x in s] == [True] * 8 + [False] * 3
    with pytest.raises(SegEvalError, match="no labelled case"):
        ensure_folds(s, k=3, seed=0, output_dir=tmp_path / "c", cv_splits={"isic": ["none"]})
    with pytest.raises(SegEvalError, match="cannot make 5 folds"):
        ensure_folds(s[:3], k=5, seed=0, output_dir=tmp_path / "d")
    # a hold-out split alone that leaves no case: one line too (was a TypeError)
    with pytest.raises(SegEvalError, match=r"no labelled case.*cv_splits=\{\}, holdout=test"):
        ensure_folds(s[-3:], k=3, seed=0, output_dir=tmp_path / "e", holdout="test")


def test_old_splits_file_still_loads(tmp_path):
    (tmp_path / "splits.json").write_text(
        '{"version": 1, "k": 2, "seed": 0, "source": "x", "folds": {"a": 0, "b": 1}}'
    )
    assert load_splits(tmp_path / "splits.json")["folds"] == {"a": 0, "b": 1}
