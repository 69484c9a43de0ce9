"""Shared steps of the protocols: read a case, load a model once per process, score, thumbnails."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.layouts import CaseSpec
from napari_segeval.models.registry import load_dense, load_promptable
from napari_segeval.models.registry import resolve_factory as resolve_factory  # for the protocols

THUMB_MAX = 192


def load_case(spec: CaseSpec, *, channel: int | None = 0, need_labels: bool = True):
    """Read a spec's image and reference labels into a :class:`Case`: ``channel`` picks one
    channel (a file of a ``_0000``, ``_0001`` ... set, or of a 4D MSD file), ``None`` reads
    them all (``"czyx"``); the layout's structure names win over the reader's.
    """
    from napari_segeval.io import read_case, read_channels

    if need_labels and not spec.labels:
        raise SegEvalError(f"case {spec.case_id}: no reference labels")
    names = list(spec.meta.get("channel_names") or [])
    if spec.labels and Path(spec.labels).is_dir():  # one mask file per structure
        from napari_segeval.evaluation._layouts_3d import read_structure_case

        k = 0 if channel is None else int(channel)
        if not 0 <= k < len(spec.images):
            raise SegEvalError(f"case {spec.case_id}: no channel {k} (has {len(spec.images)})")
        return read_structure_case(
            spec.images[k], spec.labels, spec.structures, modality=spec.modality
        )
    ds = Path(spec.root) / "dataset.json"
    how: dict[str, Any] = {"modality": spec.modality, "color_table": spec.reader_color_table()}
    how["dataset_json"] = ds if spec.layout in ("msd", "nnunet") and ds.is_file() else None
    one_file = len(spec.images) == 1 and len(names) > 1  # a 4D file holding the channels
    n = len(names) if one_file else len(spec.images)
    if channel is None and n > 1:
        case = read_channels(spec.images, spec.labels, n_channels=len(names) or None, **how)
    else:
        k = 0 if channel is None else int(channel)
        if not 0 <= k < n:
            raise SegEvalError(f"case {spec.case_id}: no channel {k} (has {n})")
        image, volume = (spec.images[0], k) if one_file else (spec.images[k], None)
        case = read_case(image, spec.labels, volume=volume, **how)
        if one_file:
            case.meta["channel"] = k
    if spec.structures:
        case.structures = dict(spec.structures)
    return case


@lru_cache(maxsize=4)
def promptable_model(ref: str, device: str | None = None, precision: str = "auto") -> Any:
    """A promptable model (:func:`~napari_segeval.models.registry.load_promptable`), loaded once per process."""
    return load_promptable(ref, device=device, precision=precision)


@lru_cache(maxsize=4)
def dense_model(ref: str, device: str | None = None) -> Any:
    """A dense model (:func:`~napari_segeval.models.registry.load_dense`), loaded once per process."""
    return load_dense(ref, device=device)


def score(
    reference: np.ndarray | None,
    prediction: np.ndarray,
    spacing,
    structures: Mapping[int, str],
    condition: str,
    *,
    tolerance_mm: float = 2.0,
    empty: str = "one",
    surface: bool = True,
) -> list[dict]:
    """Metric rows (``metrics.structure_table``) tagged with ``structure`` and ``condition``.

    Each row also says whether the structure is ``absent`` from both reference and
    prediction (its Dice is no failure). Without a ``reference`` nothing is scored: one row
    per structure of ``structures`` (to carry its risk).
    """
    from napari_segeval.metrics import structure_table

    if reference is None:
        return [
            {"structure": n, "label": int(k), "condition": condition} for k, n in structures.items()
        ]
    if reference.shape != prediction.shape:
        raise SegEvalError(
            f"prediction shape {prediction.shape} differs from the reference {reference.shape}"
        )
    kw: dict[str, Any] = {"tolerance_mm": tolerance_mm, "empty": empty, "surface": surface}
    rows = structure_table(reference, prediction, spacing, structures=structures or None, **kw)
    return [
        {
            "structure": r["name"],
            "condition": condition,
            **{k: v for k, v in r.items() if k != "name"},
            "absent": bool(r["volume_ref_ml"] == 0 and r["volume_pred_ml"] == 0),
        }
        for r in rows
    ]


def score_case(case, prediction, structures: Mapping[int, str], condition: str, **kw) -> list:
    """:func:`score` of a prediction on ``case``'s reference and spacing."""
    return score(case.labels, np.asarray(prediction), case.spacing, structures, condition, **kw)


def cached(
    record_path: str | Path, key: Any, make: Callable[[], dict], *, needs: tuple = ()
) -> dict:
    """Make once: the JSON record at ``record_path`` when it was made from ``key``, else ``make()``.

    The record is reused when its ``fingerprint`` (SHA-256 of ``key`` as sorted JSON) matches
    and every path of ``needs`` exists; otherwise ``make()`` runs and its record is written
    atomically.
    """
    from napari_segeval._errors import ReadError
    from napari_segeval.evaluation import store

    path = Path(record_path)
    fp = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()
    if path.is_file() and all(Path(n).is_file() for n in needs):
        try:
            old = store.read_json(path)
        except ReadError:
            old = {}
        if old.get("fingerprint") == fp:
            return old
    record = {**make(), "fingerprint": fp}
    store.write_json(path, record)
    return store.read_json(path)


def train_once(path: str | os.PathLike, key: Any, train: Callable[[Path], dict]) -> dict:
    """A model file trained once per ``key``: ``train(path) -> record``, kept in ``path.json``."""
    path = Path(path)
    return cached(path.with_suffix(".json"), key, lambda: train(path), needs=(path,))


def trained_model(path: str | os.PathLike, device: str | None, case_id: str) -> Any:
    """The dense model trained into ``path`` (loaded once per version), refused for its training cases."""
    model = _trained(str(path), Path(path).stat().st_mtime_ns, device)
    meta = model.meta
    if case_id in (meta.get("train_cases") or (meta.get("training") or {}).get("train_cases", [])):
        raise SegEvalError(
            f"case {case_id} was a training case of {path}: refusing to score it with that model"
        )
    return model


@lru_cache(maxsize=8)
def _trained(path: str, mtime_ns: int, device: str | None) -> Any:
    """A trained model file, loaded once per version (its modification time)."""
    return load_dense(path, device=device or "cpu")


def num_classes(train: Sequence, cases: Sequence) -> int:
    """One more than the largest label id named by the specs ``train`` or in their ``cases``."""
    ids = [int(k) for s in train for k in s.structures]
    return max(ids + [int(c.labels.max()) for c in cases] + [1]) + 1


def views(case, predictions: Mapping[str, np.ndarray], index: int | None = None) -> dict:
    """Thumbnails of the image, reference and each prediction on slice ``index`` of a 3D/video
    case (default: the largest reference area, else the middle)."""
    ref, k = case.labels, index
    if k is None and len(case.spatial_shape) >= 3:
        fg = None if ref is None else (ref > 0).reshape(ref.shape[0], -1).sum(axis=1)
        k = case.spatial_shape[0] // 2 if fg is None else int(np.argmax(fg))
    take = (lambda a: a[k]) if k is not None else (lambda a: a)
    image = case.image[0] if case.is_multichannel else case.image  # first channel shown
    image = np.asarray(take(image), dtype=np.float32)
    lo, hi = np.percentile(image, [1, 99]) if image.size else (0.0, 1.0)  # 1-99% as uint8
    hi = hi if hi > lo else lo + 1.0
    out = {"image": (np.clip((image - lo) / (hi - lo), 0, 1) * 255).astype(np.uint8)}
    if ref is not None:
        out["reference"] = take(ref).astype(np.uint16)
    for name, pred in predictions.items():
        out[f"pred:{name}"] = take(np.asarray(pred)).astype(np.uint16)
    for name, a in out.items():  # every n-th pixel: at most THUMB_MAX wide
        step = max(1, int(np.ceil(max(a.shape[:2]) / THUMB_MAX)))
        out[name] = a[::step, ::step]
    return out


def case_arrays(
    case, predictions: Mapping[str, np.ndarray], images: Mapping[str, np.ndarray] | None = None
):
    """A case's :class:`~napari_segeval.evaluation.protocols.CaseArrays`: label maps and float images."""
    from napari_segeval.evaluation.protocols import CaseArrays

    arrays = {str(k): np.asarray(v) for k, v in predictions.items()}
    arrays.update(
        {str(k): np.asarray(v, np.float32) for k, v in (images or {}).items() if v is not None}
    )
    return CaseArrays(case.geometry, case.axes, str(case.image_path or ""), arrays)


def output(
    case, rows: list[dict], predictions: Mapping, images=None, *, shown=None, index=None, **kw
):
    """A case's :class:`~napari_segeval.evaluation.protocols.CaseOutput`: the thumbnails of
    ``shown`` (default: ``predictions``) on slice ``index`` (:func:`views`), and ``predictions``
    and ``images`` to save (:func:`case_arrays`); ``kw``: its ``extra`` and ``slices``.
    """
    from napari_segeval.evaluation.protocols import CaseOutput

    thumbs = views(case, predictions if shown is None else shown, index=index)
    return CaseOutput(rows, thumbs, arrays=case_arrays(case, predictions, images), **kw)
