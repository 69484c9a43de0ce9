"""Shared steps of the protocols: read a case, load a model once per process, score, thumbnails."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.layouts import CaseSpec

THUMB_MAX = 192


def load_case(spec: CaseSpec, *, channel: int = 0, need_labels: bool = True):
    """Read a spec's image (one channel) and reference labels into a :class:`Case`.

    Structure names from the layout win over names found by the reader.
    """
    from napari_segeval.io import read_case

    if need_labels and not spec.labels:
        raise SegEvalError(f"case {spec.case_id}: no reference labels")
    if channel >= len(spec.images):
        raise SegEvalError(f"case {spec.case_id}: no channel {channel} "
                           f"(has {len(spec.images)})")
    ds = Path(spec.root) / "dataset.json" if spec.layout in ("msd", "nnunet") else None
    case = read_case(spec.images[channel], spec.labels, modality=spec.modality,
                     dataset_json=ds if ds is not None and ds.is_file() else None,
                     color_table=spec.reader_color_table())
    if spec.structures:
        case.structures = dict(spec.structures)
    return case


def resolve_factory(ref: str):
    """``"package.module:callable"`` -> the callable (a model factory given by the user)."""
    module, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise SegEvalError(f"cannot import model factory {ref!r}: {exc}") from exc


@lru_cache(maxsize=4)
def promptable_model(ref: str, device: str | None = None) -> Any:
    """A promptable model, loaded once per process.

    ``"builtin"`` (shipped weights), ``"threshold"`` (weight-free baseline),
    ``"medsam2:CHECKPOINT"`` (optional extra) or ``"module:factory"``.
    """
    dev = device or "auto"
    if ref == "builtin":
        from napari_segeval.models.builtin_prompt import BuiltinPromptModel

        return BuiltinPromptModel(device=dev)
    if ref == "threshold":
        from napari_segeval.models.threshold import ThresholdPromptModel

        return ThresholdPromptModel(device="cpu" if dev == "auto" else dev)
    if ref.startswith("medsam2:"):
        from napari_segeval.models.medsam2 import load_medsam2

        return load_medsam2(ref.split(":", 1)[1], device=device)
    return resolve_factory(ref)()


@lru_cache(maxsize=4)
def dense_model(ref: str, device: str | None = None) -> Any:
    """A dense model, loaded once per process: ``"builtin-ct"``, a file/folder, or ``"module:factory"``."""
    from napari_segeval.models.dense import BUILTIN, load_dense_model

    if ref in BUILTIN or Path(ref).expanduser().exists() or ":" not in ref:
        return load_dense_model(ref, device=device)
    return resolve_factory(ref)()


def score(reference: np.ndarray, prediction: np.ndarray, spacing, structures: Mapping[int, str],
          condition: str, *, tolerance_mm: float = 2.0, empty: str = "one",
          surface: bool = True) -> list[dict]:
    """Metric rows (``metrics.structure_table``) tagged with ``structure`` and ``condition``."""
    from napari_segeval.metrics import structure_table

    if reference.shape != prediction.shape:
        raise SegEvalError(f"prediction shape {prediction.shape} differs from the reference "
                           f"{reference.shape}")
    rows = structure_table(reference, prediction, spacing, structures=structures or None,
                           tolerance_mm=tolerance_mm, empty=empty, surface=surface)
    return [{"structure": r["name"], "condition": condition,
             **{k: v for k, v in r.items() if k != "name"}} for r in rows]


def _shrink(a: np.ndarray) -> np.ndarray:
    step = max(1, int(np.ceil(max(a.shape[:2]) / THUMB_MAX)))
    return a[::step, ::step]


def _to_uint8(img: np.ndarray) -> np.ndarray:
    img = np.asarray(img, dtype=np.float32)
    lo, hi = np.percentile(img, [1, 99]) if img.size else (0.0, 1.0)
    if hi <= lo:
        hi = lo + 1.0
    return (np.clip((img - lo) / (hi - lo), 0, 1) * 255).astype(np.uint8)


def key_index(reference: np.ndarray, spatial_ndim: int) -> int | None:
    """Slice (first axis) with the most reference foreground; None for 2D."""
    if spatial_ndim < 3:
        return None
    counts = (reference > 0).reshape(reference.shape[0], -1).sum(axis=1)
    return int(np.argmax(counts))


def views(case, predictions: Mapping[str, np.ndarray], index: int | None = None) -> dict:
    """Thumbnail slices: image, reference and each condition's prediction on one slice.

    3D/video cases use slice ``index`` (default: the largest reference area).
    """
    ref = case.labels
    nd = len(case.spatial_shape)
    k = key_index(ref, nd) if index is None else index
    take = (lambda a: a[k]) if k is not None else (lambda a: a)
    out = {"image": _shrink(_to_uint8(take(case.image))),
           "reference": _shrink(take(ref).astype(np.uint16))}
    for name, pred in predictions.items():
        out[f"pred:{name}"] = _shrink(take(np.asarray(pred)).astype(np.uint16))
    return out


def case_arrays(case, predictions: Mapping[str, np.ndarray],
                images: Mapping[str, np.ndarray] | None = None):
    """What to save of a case: each condition's label map, perturbed images and perturbations.

    ``predictions`` maps condition -> label map; ``images`` maps
    ``"perturbed:<condition>"`` / ``"perturbation:<condition>"`` -> float array
    (see :class:`~napari_segeval.evaluation.protocols.CaseArrays`).
    """
    from napari_segeval.evaluation.protocols import CaseArrays

    arrays = {str(k): np.asarray(v) for k, v in predictions.items()}
    arrays.update({str(k): np.asarray(v, np.float32) for k, v in (images or {}).items()
                   if v is not None})
    return CaseArrays(case.geometry, case.axes, str(case.image_path or ""), arrays)


__all__ = ["case_arrays", "dense_model", "key_index", "load_case", "promptable_model",
           "resolve_factory", "score", "views"]
