"""Cross-validation splits: from a published file, or seeded k-fold saved as JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from napari_segeval._atomic import atomic_write_text
from napari_segeval._errors import ReadError

SPLITS_VERSION = 1


def kfold_assignment(case_ids: Iterable[str], k: int = 5, seed: int = 0) -> dict[str, int]:
    """Assign each case to one of ``k`` folds, reproducibly.

    Ids are sorted first, so the answer does not depend on their order; a seeded
    permutation is dealt round-robin, so fold sizes differ by at most one.

    Examples
    --------
    >>> a = kfold_assignment([f"c{i}" for i in range(7)], k=3, seed=1)
    >>> sorted(np.bincount(list(a.values())).tolist()), a == kfold_assignment(sorted(a, reverse=True), 3, 1)
    ([2, 2, 3], True)
    """
    ids = sorted(set(case_ids))
    if k < 2:
        raise ValueError(f"k-fold needs k >= 2, got {k}")
    if len(ids) < k:
        raise ValueError(f"{len(ids)} cases cannot fill {k} folds")
    order = np.random.default_rng(seed).permutation(len(ids))
    return {ids[j]: int(i % k) for i, j in enumerate(order)}


def save_splits(path: str | os.PathLike, folds: dict[str, int], *, k: int, seed: int | None,
                source: str) -> Path:
    """Write ``{"version", "k", "seed", "source", "folds": {case: fold}}`` atomically (replacing).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "splits.json"
    >>> _ = save_splits(p, {"a": 0, "b": 1}, k=2, seed=0, source="seeded k-fold")
    >>> load_splits(p)["folds"]
    {'a': 0, 'b': 1}
    """
    path = Path(path)
    payload = {"version": SPLITS_VERSION, "k": int(k), "seed": seed, "source": source,
               "folds": {str(c): int(f) for c, f in sorted(folds.items())}}
    return atomic_write_text(path, json.dumps(payload, indent=1), overwrite=True)


def load_splits(path: str | os.PathLike) -> dict:
    """Read a file written by :func:`save_splits`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        folds = {str(c): int(f) for c, f in data["folds"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReadError(f"{path}: not a splits file ({exc})") from exc
    return {**data, "folds": folds}


def load_nnunet_splits(path: str | os.PathLike) -> dict[str, int]:
    """Case -> fold from nnU-Net's ``splits_final.json`` (fold = where a case is ``val``).

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "splits_final.json"
    >>> _ = p.write_text(json.dumps([{"train": ["b"], "val": ["a"]}, {"train": ["a"], "val": ["b"]}]))
    >>> load_nnunet_splits(p)
    {'a': 0, 'b': 1}
    """
    path = Path(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return {str(c): i for i, fold in enumerate(data) for c in fold["val"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReadError(f"{path}: not an nnU-Net splits_final.json ({exc})") from exc


def apply_folds(specs: Sequence, folds: dict[str, int]) -> None:
    """Set ``spec.fold`` from ``folds`` (cases not listed keep theirs)."""
    for s in specs:
        if s.case_id in folds:
            s.fold = int(folds[s.case_id])


def ensure_folds(specs: Sequence, k: int, seed: int, output_dir: str | os.PathLike) -> dict:
    """Give every labelled case a fold and save the assignment to ``output_dir/splits.json``.

    Folds the layout already set (a published splits file) are kept, and the file
    records that source; otherwise a seeded k-fold is made. A ``splits.json``
    already in ``output_dir`` (a resumed run) is reused so the folds never change
    under a run.

    Returns
    -------
    dict
        The saved splits payload.
    """
    out = Path(output_dir) / "splits.json"
    labelled = [s for s in specs if s.labels and not s.error]
    if out.is_file():
        saved = load_splits(out)
        apply_folds(specs, saved["folds"])
        return saved
    if labelled and all(s.fold is not None for s in labelled):
        folds = {s.case_id: int(s.fold) for s in labelled}
        k_used, seed_used, source = len(set(folds.values())), None, "published splits file"
    else:
        folds = kfold_assignment([s.case_id for s in labelled], k=k, seed=seed)
        apply_folds(specs, folds)
        k_used, seed_used, source = k, seed, "seeded k-fold"
    save_splits(out, folds, k=k_used, seed=seed_used, source=source)
    return load_splits(out)


__all__ = ["apply_folds", "ensure_folds", "kfold_assignment", "load_nnunet_splits",
           "load_splits", "save_splits"]
