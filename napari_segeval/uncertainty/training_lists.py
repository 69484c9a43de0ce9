"""Training lists without the most uncertain cases: nnU-Net ``splits_final.json`` and
MSD / nnU-Net ``dataset.json`` (a v2 one that lists no cases cannot drop any; the splits
file does).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

import numpy as np

from napari_segeval.io._formats import IMAGE_SUFFIXES, stem, suffix

#: nnU-Net's default cross-validation: folds and seed.
NNUNET_FOLDS = 5
NNUNET_SEED = 12345


def case_id_of(entry: str) -> str:
    """Case id of a ``dataset.json`` path: file name without extension or channel suffix."""
    name = PurePosixPath(str(entry).replace("\\", "/")).name
    if suffix(name) in IMAGE_SUFFIXES:
        name = stem(name)
    if len(name) > 5 and name[-5] == "_" and name[-4:].isdigit():
        name = name[:-5]
    return name


def crossval_splits(
    case_ids: Iterable[str], n_splits: int = NNUNET_FOLDS, seed: int = NNUNET_SEED
) -> list[dict[str, list[str]]]:
    """Five folds as nnU-Net's ``generate_crossval_split`` makes them, over sorted ids.

    scikit-learn's shuffled ``KFold`` written with numpy: fold ``k``'s ``val`` is the
    ``k``-th chunk of a ``RandomState(seed)`` shuffle of the indices (the first
    ``n % n_splits`` chunks one longer); both lists are in sorted id order. nnU-Net's
    own split is the same when it lists the cases in that order.
    """
    ids = sorted(set(case_ids))
    n = len(ids)
    if n < n_splits:
        raise ValueError(f"{n} training cases cannot fill {n_splits} folds")
    order = np.arange(n)
    np.random.RandomState(seed).shuffle(order)
    out = []
    for chunk in np.array_split(order, n_splits):  # the first n % n_splits one longer
        val = set(chunk.tolist())
        out.append(
            {
                "train": [ids[i] for i in range(n) if i not in val],
                "val": [ids[i] for i in range(n) if i in val],
            }
        )
    return out


def filter_splits(splits: Sequence[dict], removed: Iterable[str]) -> list[dict]:
    """Remove ``removed`` from every fold's ``train`` list (``val`` lists unchanged)."""
    gone = set(removed)
    out = []
    for fold in splits:
        f = copy.deepcopy(dict(fold))
        f["train"] = [c for c in f.get("train", []) if c not in gone]
        out.append(f)
    return out


def filter_dataset_json(dataset: dict, removed: Iterable[str]) -> tuple[dict, list[str]]:
    """``dataset.json`` without the ``removed`` training cases (MSD ``training``, nnU-Net v2
    ``dataset``; ``numTraining`` follows, ``test`` untouched), and the ids actually dropped."""
    gone = set(removed)
    out = copy.deepcopy(dict(dataset))
    dropped: list[str] = []
    training = out.get("training")
    if isinstance(training, list):
        keep = []
        for entry in training:
            image = entry.get("image") if isinstance(entry, dict) else entry
            cid = case_id_of(str(image))
            if cid in gone:
                dropped.append(cid)
            else:
                keep.append(entry)
        out["training"] = keep
        out["numTraining"] = len(keep)
    explicit = out.get("dataset")
    if isinstance(explicit, dict):
        dropped += [c for c in explicit if c in gone]
        out["dataset"] = {c: v for c, v in explicit.items() if c not in gone}
        out["numTraining"] = len(out["dataset"])
    return out, sorted(set(dropped))
