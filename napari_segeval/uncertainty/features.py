"""Class-wise decoded maps of a frozen promptable model, and their semantic perception scales."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval.metrics.table import structures_to_score
from napari_segeval.uncertainty.auv import class_matrix, semantic_scale

if TYPE_CHECKING:
    from napari_segeval.models.walk import Order

ProgressFn = Callable[[int, int], None]
#: A class needs at least this many reference voxels to be prompted and scored.
MIN_VOXELS = 2


def feature_kind(model: Any) -> str:
    """``"logits"`` for backends with their decoder's logits, else ``"probabilities"``.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> feature_kind(ThresholdPromptModel())
    'probabilities'
    """
    return "logits" if model.capabilities.logits else "probabilities"


def decoded_map(
    model: Any,
    frames: Any,
    box: Any,
    *,
    mode: str = "volume",
    progress: ProgressFn | None = None,
    cancel: Any = None,
) -> np.ndarray:
    """The decoded map ``(n, H, W)`` float32 of one structure prompted by ``box``.

    The mask decoder's output before any threshold (:func:`feature_kind`), with no stop or
    post-processing. Volumes walk forward and backward from ``box.index`` (the key slice
    keeps the larger of its two outputs); videos and 2D images walk forward (frames before
    the prompt are not visited and stay at the smallest value decoded).
    """
    import torch

    from napari_segeval.models.walk import WalkOptions, n_visited
    from napari_segeval.propagation.core import shifted_progress

    n = int(frames.shape[0])
    k = int(box.index)
    orders: tuple[Order, ...] = ("forward", "backward") if mode == "volume" else ("forward",)
    total = sum(n_visited(n, k, o) for o in orders)
    walk = model.propagate_logits if model.capabilities.logits else model.propagate
    parts, offset = {}, 0
    for order in orders:
        options = WalkOptions(progress=shifted_progress(progress, offset, total), cancel=cancel)
        with torch.no_grad():
            seq = walk(frames, k, box, order, options=options)
        parts[order] = torch.as_tensor(seq).detach().float().cpu().numpy()
        offset += n_visited(n, k, order)
    fwd = parts["forward"]
    if mode == "volume":
        bwd = parts["backward"]
        key = np.maximum(fwd[:1], bwd[:1])
        return np.concatenate([bwd[1:][::-1], key, fwd[1:]]).astype(np.float32)
    floor = float(fwd.min()) if fwd.size else 0.0
    before = np.full((k, *fwd.shape[1:]), floor, np.float32)
    return np.concatenate([before, fwd]).astype(np.float32)


def resample_map(decoded: np.ndarray, grid: Sequence[int] | None) -> np.ndarray:
    """A 3D decoded map resampled (linearly) to ``grid`` (``[D, H, W]``); 2D maps and None unchanged."""
    from napari_segeval.inference.resample import resample_to_shape

    a = np.asarray(decoded, np.float32)
    return resample_to_shape(a, grid, order=1) if grid and a.ndim == 3 else a


def class_scales(
    model: Any,
    case: Any,
    structures: Mapping[int, str] | None = None,
    *,
    layout: str = "D_HW",
    power: float = 2.0,
    min_voxels: int = MIN_VOXELS,
    window: Any = None,
    grid: Sequence[int] | None = None,
    ct_mapping: str = "window",
    progress: ProgressFn | None = None,
    cancel: Any = None,
) -> list[dict]:
    """Semantic perception scale of every structure of a labelled case.

    Parameters
    ----------
    model : PromptableModel
        A frozen promptable backend.
    case : Case
        Image and reference labels (the prompts come from the labels).
    structures : mapping, optional
        Label id -> name (default: :func:`napari_segeval.metrics.structures_to_score`).
    layout, power
        As in :func:`napari_segeval.uncertainty.auv.class_matrix` and
        :func:`~napari_segeval.uncertainty.auv.semantic_scale`.
    min_voxels : int
        Classes with fewer reference voxels are not prompted (NaN scale, ``note`` says why).
    window : str or (width, level), optional
        CT window of the backend's preprocessing (None: its default).
    grid : (int, int, int), optional
        Resample each 3D decoded map to this ``[D, H, W]`` before the SVD, so every
        case has as many singular values.
    ct_mapping : {"window", "minmax"}
        The backend's CT intensity mapping (``"minmax"``: MedSAM2's own).
    progress : callable, optional
        ``progress(done, total)`` over every propagation step of every class.
    cancel : threading.Event, optional
        Checked before each class and every propagation step.

    Returns
    -------
    list of dict
        One row per structure: ``label``, ``name``, ``n_voxels``, ``scale``
        (float, NaN when not scored), ``note``.
    """
    from napari_segeval.prompts import box_from_labels
    from napari_segeval.propagation import promptable_kind, propagation_mode
    from napari_segeval.propagation.core import shifted_progress
    from napari_segeval.propagation.images import as_frames

    labels = np.asarray(case.labels)
    if structures is None:
        structures = structures_to_score(case.structures, labels)
    kind = promptable_kind(case)
    mode = propagation_mode(kind)
    counts = {int(k): int(np.count_nonzero(labels == int(k))) for k in structures}
    todo = [k for k in structures if counts[int(k)] >= min_voxels]
    extra = {} if ct_mapping == "window" else {"ct_mapping": ct_mapping}
    frames = None
    if todo:
        image = as_frames(np.asarray(case.image), kind)
        frames = model.preprocess(image, case.modality or "CT", window, **extra)
    lab3 = labels[None] if kind == "image" else labels
    n = 1 if kind == "image" else int(labels.shape[0])
    steps = {}
    for k in todo:
        box = box_from_labels(lab3, int(k), mode=mode)
        steps[k] = (box, n + 1 if mode == "volume" else n - box.index)
    total = sum(s for _, s in steps.values())
    done = 0
    rows = []
    for k, name in structures.items():
        c = counts[int(k)]
        row = {"label": int(k), "name": str(name), "n_voxels": c, "scale": math.nan, "note": ""}
        if c == 0:
            row["note"] = "absent from the reference: not prompted"
        elif c < min_voxels:
            row["note"] = f"{c} reference voxel(s), fewer than {min_voxels}: not prompted"
        else:
            check_cancel(cancel, "semantic perception scale")
            box, n_steps = steps[k]
            cb = shifted_progress(progress, done, total)
            decoded = decoded_map(model, frames, box, mode=mode, progress=cb, cancel=cancel)
            done += n_steps
            volume = decoded[0] if kind == "image" else resample_map(decoded, grid)
            row["scale"] = scale = semantic_scale(class_matrix(volume, layout), power)
            if math.isnan(scale):
                row["note"] = "decoded map is zero or has fewer than 2 rows/columns: no scale"
        rows.append(row)
    return rows
