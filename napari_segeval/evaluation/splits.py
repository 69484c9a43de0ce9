"""Cross-validation splits: from a published file, or a seeded k-fold grouped by patient,
saved as JSON. Every case of one patient (``CaseSpec.group``) lands in one fold; a case
without a published patient id is its own group.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from napari_segeval._atomic import atomic_write_text
from napari_segeval._errors import ReadError, SegEvalError

SPLITS_VERSION = 2


def grouped_kfold_assignment(
    groups: Mapping[str, str], k: int = 5, seed: int = 0
) -> dict[str, int]:
    """Case id -> fold ``0 .. k-1``, every case of one group (case id -> patient ...) in one.

    Groups in a seeded permutation of their sorted ids are placed largest first (stable), each
    in the fold holding the fewest cases (lowest on a tie): round-robin for single cases.
    """
    if k < 2:
        raise ValueError(f"k-fold needs k >= 2, got {k}")
    members: dict[str, list[str]] = {}
    for case, group in groups.items():
        members.setdefault(str(group), []).append(str(case))
    names = sorted(members)
    if len(names) < k:
        raise ValueError(f"{len(names)} groups ({len(groups)} cases) cannot fill {k} folds")
    order = [names[j] for j in np.random.default_rng(seed).permutation(len(names))]
    order.sort(key=lambda g: -len(members[g]))  # stable: ties keep the seeded order
    load = [0] * k
    out: dict[str, int] = {}
    for g in order:
        fold = min(range(k), key=lambda f: (load[f], f))
        load[fold] += len(members[g])
        out.update(dict.fromkeys(members[g], fold))
    return out


def groups_across_folds(specs: Sequence, folds: Mapping[str, int]) -> list[str]:
    """Group ids whose cases sit in more than one fold (a leak), sorted."""
    seen: dict[str, set[int]] = {}
    for s in specs:
        if s.case_id in folds:
            seen.setdefault(s.group_id, set()).add(int(folds[s.case_id]))
    return sorted(g for g, f in seen.items() if len(f) > 1)


def in_cross_validation(
    spec, cv_splits: Mapping[str, Sequence[str]] | None = None, holdout: str | None = None
) -> bool:
    """Whether ``spec`` (labelled, no parse error) takes part in the folds: not when its split
    is ``holdout``, nor when ``cv_splits`` names its layout and not its split.
    """
    if not spec.labels or spec.error:
        return False
    if holdout is not None and spec.split == holdout:
        return False
    allowed = (cv_splits or {}).get(spec.layout)
    return allowed is None or spec.split in allowed


def save_splits(
    path: str | os.PathLike,
    folds: Mapping[str, int],
    *,
    k: int,
    seed: int | None,
    source: str,
    groups: Mapping[str, str] | None = None,
    leaks: Sequence[str] = (),
) -> Path:
    """Write the splits file atomically (``groups``: cases of a named patient group; ``leaks``:
    groups in more than one fold, which only a published splits file can make).
    """
    payload = {
        "version": SPLITS_VERSION,
        "k": int(k),
        "seed": seed,
        "source": source,
        "folds": {str(c): int(f) for c, f in sorted(folds.items())},
        "groups": {str(c): str(g) for c, g in sorted((groups or {}).items())},
        "groups_across_folds": sorted(str(g) for g in leaks),
    }
    return atomic_write_text(Path(path), json.dumps(payload, indent=1), overwrite=True)


def load_splits(path: str | os.PathLike) -> dict:
    """Read a file written by :func:`save_splits` (version 1 files have no groups)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        folds = {str(c): int(f) for c, f in data["folds"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReadError(f"{path}: not a splits file ({exc})") from exc
    return {**data, "folds": folds}


def load_nnunet_splits(path: str | os.PathLike) -> dict[str, int]:
    """Case -> fold from nnU-Net's ``splits_final.json`` (fold = where a case is ``val``)."""
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


def ensure_folds(
    specs: Sequence,
    k: int,
    seed: int,
    output_dir: str | os.PathLike,
    *,
    cv_splits: Mapping[str, Sequence[str]] | None = None,
    holdout: str | None = None,
) -> dict:
    """Give every case :func:`in_cross_validation` accepts a fold (the others ``None``), save
    them to ``output_dir/splits.json`` and return it: a published splits file's folds, else
    :func:`grouped_kfold_assignment`'s; a ``splits.json`` already there (a resumed run) is kept.
    """
    out = Path(output_dir) / "splits.json"
    chosen = [s for s in specs if in_cross_validation(s, cv_splits, holdout)]
    inside_cv = {id(s) for s in chosen}
    for s in specs:
        if id(s) not in inside_cv:
            s.fold = None  # never trained on, never scored as a fold's case
    if out.is_file():
        saved = load_splits(out)
        apply_folds(specs, saved["folds"])
        return saved
    if not chosen:
        why = f" (cv_splits={dict(cv_splits or {})}, holdout={holdout})"
        raise SegEvalError(
            "no labelled case to cross-validate" + (why if cv_splits or holdout else "")
        )
    if all(s.fold is not None for s in chosen):
        folds = {s.case_id: int(s.fold) for s in chosen}
        k_used, seed_used, source = len(set(folds.values())), None, "published splits file"
    else:
        try:
            folds = grouped_kfold_assignment(
                {s.case_id: s.group_id for s in chosen}, k=k, seed=seed
            )
        except ValueError as exc:
            raise SegEvalError(f"cannot make {k} folds: {exc}") from exc
        apply_folds(specs, folds)
        k_used, seed_used, source = k, seed, "seeded k-fold grouped by patient"
    groups = {s.case_id: s.group_id for s in chosen if s.group_id != s.case_id}
    leaks = groups_across_folds(chosen, folds)
    save_splits(out, folds, k=k_used, seed=seed_used, source=source, groups=groups, leaks=leaks)
    return load_splits(out)


__all__ = [
    "apply_folds",
    "ensure_folds",
    "grouped_kfold_assignment",
    "groups_across_folds",
    "in_cross_validation",
    "load_nnunet_splits",
    "load_splits",
    "save_splits",
]
