"""Bidirectional (volume) and forward (video) propagation for any promptable backend.

The MedSAM2 recipe: segment the key slice from its box, propagate forward to
the last slice, reset and re-prompt on the key slice, propagate backward to the
first slice, take the union (voxel-wise maximum of the probabilities), and
keep the largest 3D connected component (face connectivity, 6 neighbours in
3D, by default; ``connectivity=26``: MedSAM2's scikit-image default). Videos are propagated forward only
from the prompted frame; earlier frames stay background. Several structures
are merged into one label map; where two structures claim a voxel the higher
probability wins, except that a structure enclosed by another (a lesion inside
its organ) wins its overlap with it. Each structure's own mask, before
merging, is kept too (:attr:`PropagationResult.masks`), for scoring each
structure on its own propagation as MedSAM2 does.

Foreground decision (``decision``): ``"probability"`` (default) keeps voxels
whose probability is above ``threshold``; ``"logit"`` (MedSAM2's scripts)
keeps voxels whose logit is above 0, taken from the backend's logits when it
has them (``walk_logits``: MedSAM2), else from the logit of its probability.
The two agree except where float32's sigmoid rounds a tiny positive logit to
exactly 0.5.

Several structures for the price of one (``share=True``, the default): every
direction of every structure is a :class:`~napari_segeval.models.base.Walk`, and
a backend that implements ``propagate_walks`` gets them all in one call, so it
can share per-frame work between structures and directions (MedSAM2 encodes each
frame once per case, within ``cache_mb``) and batch the walks of one step. Each
structure keeps its own prompt and memory: the probabilities are the same as with
one pass per structure (``share=False``).

Confidence stop (``min_confidence``): walking away from the key
slice, each direction ends at the first slice whose *confidence*, the mean
probability over the voxels predicted as foreground (``p > threshold``), is
below ``min_confidence``; that slice and every later one become background.
Rationale: a well-calibrated model is confident inside an object it tracks
(mean foreground probability near 1) and hesitant when its prior mask has
slid onto tissue whose outline no longer matches the mask (the typical leak at
the end of a structure); such a leak stays connected to the object, so
keep-largest-component cannot remove it. The key slice itself is never cut.
The decision uses detached values; the kept slices stay differentiable. The
default ``"auto"`` uses the model's own calibrated value, its attribute
``stop_confidence`` (the built-in model: 0.8, chosen on tuning phantoms with
seeds 500-509, disjoint from training and benchmark seeds), and no stop for
models without one (MedSAM2 keeps its published recipe).

Watching it happen (``on_slice``): :func:`propagate_case` can report each
structure's mask on each slice as soon as the backend has computed it (the key
slice first), so a viewer can show a wrong start at once. A backend whose
``propagate_walks``/``propagate`` takes an ``on_frame(walk, frame, prob)`` keyword
reports every step; for any other, a walk's slices are reported when the walk
returns. The reports only read the probabilities: the result is the same with or
without ``on_slice``; they come before the confidence stop, the largest-component
step and the merge, which the final label map applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval.models.base import ProgressFn, PromptableModel, Walk, n_visited
from napari_segeval.prompts.box import Box
from napari_segeval.propagation.masks import (
    merge_structures,
    structure_masks,
)
from napari_segeval.propagation.walks import (
    combine_walks,
    resolve_min_confidence,
    run_walks,
)

if TYPE_CHECKING:  # pragma: no cover
    import threading
    from collections.abc import Callable

    import torch

MODES = ("volume", "video")


@dataclass
class PropagationResult:
    """Output of :func:`propagate_case`.

    Attributes
    ----------
    labels : numpy.ndarray
        ``(n, H, W)`` label map (uint8, or uint16 for label ids above 255).
    probabilities : dict of int to numpy.ndarray
        Foreground probability ``(n, H, W)`` float32 per structure, before
        post-processing (largest component, overlap resolution).
    prompts : list of Box
        The boxes used, in order.
    params : dict
        Model name and the propagation settings, for provenance.
    tensors : dict of int to torch.Tensor
        With ``grad=True`` only: the differentiable probabilities (graph to the
        input frames); empty otherwise.
    masks : dict of int to numpy.ndarray
        Each structure's own boolean mask ``(n, H, W)`` from its own propagation
        (decision rule and largest component applied), before the structures are
        merged: overlaps between structures are kept.
    """

    labels: np.ndarray
    probabilities: dict[int, np.ndarray]
    prompts: list[Box]
    params: dict
    tensors: dict[int, Any] = field(default_factory=dict)
    masks: dict[int, np.ndarray] = field(default_factory=dict)


def total_steps(n_frames: int, prompts: list[Box], mode: str) -> int:
    """Number of model steps (progress total) for ``prompts`` on ``n_frames``.

    Examples
    --------
    >>> total_steps(10, [Box(0, 0, 2, 2, index=4)], "volume")
    11
    >>> total_steps(10, [Box(0, 0, 2, 2, index=4)], "video")
    6
    """
    total = 0
    for b in prompts:
        total += n_visited(n_frames, b.index, "forward")
        if mode == "volume":
            total += n_visited(n_frames, b.index, "backward")
    return total


def _orders(mode: str) -> tuple[str, ...]:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return ("forward", "backward") if mode == "volume" else ("forward",)


def propagate_structure(model: PromptableModel, frames: Any, box: Box, *, mode: str = "volume",
                        stop_when_empty: bool = True, progress: ProgressFn | None = None,
                        cancel: threading.Event | None = None, grad: bool = False,
                        min_confidence: float | str | None = "auto", threshold: float = 0.5,
                        prior_volume: Any = None) -> torch.Tensor:
    """Probability ``(n, H, W)`` of one structure from its box on frame ``box.index``.

    ``progress`` receives per-step counts for this structure only.
    ``prior_volume`` (``(n, H, W)``, optional) conditions every frame after the key
    frame on this volume instead of the model's own previous output (see
    :meth:`napari_segeval.models.base.PromptableModel.propagate`).
    ``min_confidence`` ends each direction at its first low-confidence slice
    (see the module doc; ``threshold`` defines the foreground there).

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> box = Box(2, 2, 4, 4, index=2)
    >>> p = propagate_structure(ThresholdPromptModel(), np.ones((5, 8, 8)), box)
    >>> (p.sum(dim=(1, 2)) > 0).tolist()
    [True, True, True, True, True]
    """
    orders = _orders(mode)
    min_confidence = resolve_min_confidence(model, min_confidence)
    walks = [Walk(box.index, box, o, prior_volume=prior_volume) for o in orders]
    seqs = run_walks(model, frames, walks, progress=progress, cancel=cancel,
                     stop_when_empty=stop_when_empty, grad=grad)
    return combine_walks(dict(zip(orders, seqs)), box.index, mode, min_confidence, threshold)


def propagate_case(model: PromptableModel, frames: Any, prompts: list[Box], *,
                   mode: str = "volume", keep_largest: bool = True,
                   stop_when_empty: bool = True, threshold: float = 0.5,
                   connectivity: int | None = None, decision: str = "probability",
                   min_confidence: float | str | None = "auto", nested_fraction: float | None = 0.5,
                   progress: ProgressFn | None = None, cancel: threading.Event | None = None,
                   grad: bool = False, priors: dict[int, Any] | None = None,
                   share: bool = True, cache_mb: float | None = None,
                   on_slice: Callable[[int, int, np.ndarray], None] | None = None,
                   init_masks: dict[int, Any] | None = None) -> PropagationResult:
    """Propagate every prompt through ``frames`` and merge the structures.

    Parameters
    ----------
    model : PromptableModel
        Backend (see :mod:`napari_segeval.models.base`).
    frames : tensor or array ``(n, H, W[, C])``
        Input in the model's normalized units (``model.preprocess(...)``).
    prompts : list of Box
        One box per structure (``box.label``), each on its key frame ``box.index``.
    mode : {"volume", "video"}
        Bidirectional from the key slice, or forward only.
    keep_largest : bool
        Keep the largest connected component of each structure.
    stop_when_empty : bool
        Stop a direction when the object disappears.
    threshold : float
        Probability threshold for the label map (``decision="probability"``).
    connectivity : int, optional
        Neighbours of the largest component (:func:`largest_component`):
        ``None`` (default) face connectivity (6 in 3D); MedSAM2: 26.
    decision : {"probability", "logit"}
        Foreground rule (module doc): probability above ``threshold`` (default),
        or MedSAM2's logit above 0.
    min_confidence : float, "auto" or None
        Confidence stop: end each direction at the first slice/frame whose mean
        foreground probability is below this value (module doc). ``"auto"``
        (default): the model's ``stop_confidence``, if any. ``None``: off.
    nested_fraction : float, optional
        Nested-structure rule of :func:`merge_structures` (``None``: off).
    progress : callable, optional
        ``progress(done, total)`` after each slice/frame of every pass.
    cancel : threading.Event, optional
        Set it to stop: :class:`napari_segeval._cancel.Cancelled` is raised and
        nothing is returned.
    grad : bool
        Keep the autograd graph (``result.tensors``).
    priors : dict of int to array, optional
        Per structure, an ``(n, H, W)`` volume that conditions each frame after the
        key frame instead of the model's own previous output (``prior_volume`` of
        :func:`propagate_structure`): with a clean prediction, frames are
        segmented one by one, as in per-slice attacks.
    share : bool
        Give the backend all structures and directions at once (module doc): the
        same probabilities, each frame's shared work done once. ``False``: one pass
        per structure.
    cache_mb : float, optional
        Bound, in MiB, on the per-frame work a sharing backend keeps for reuse
        (MedSAM2's image features; ``None``: the backend's default). A smaller
        bound costs recomputation, never a different result.
    on_slice : callable, optional
        ``on_slice(label, index, mask)``: structure ``label``'s boolean ``(H, W)``
        mask (``probability > threshold``) on slice/frame ``index``, called (from
        the thread that runs the propagation) as soon as it is computed, the key
        slice first (module doc). Before post-processing; never changes the result.
    init_masks : dict of int to array, optional
        Per structure, an ``(H, W)`` mask on its key frame that prompts it instead
        of its box (MedSAM2's video script prompts with the first frame's mask).

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> res = propagate_case(ThresholdPromptModel(), np.ones((6, 8, 8)),
    ...                      [Box(2, 2, 5, 5, index=3, label=4)])
    >>> res.labels.shape, sorted(res.probabilities), sorted(res.masks)
    ((6, 8, 8), [4], [4])
    """
    orders = _orders(mode)
    if decision not in ("probability", "logit"):
        raise ValueError(f"decision must be 'probability' or 'logit', got {decision!r}")
    logits = decision == "logit"
    if not prompts:
        raise ValueError("propagate_case needs at least one box prompt")
    labels_seen = [b.label for b in prompts]
    if len(set(labels_seen)) != len(labels_seen):
        raise ValueError(f"one box per structure, got labels {labels_seen}")
    min_confidence = resolve_min_confidence(model, min_confidence)
    n = int(frames.shape[0])
    total = total_steps(n, prompts, mode)
    walks = [Walk(b.index, b, o, prior_volume=None if priors is None else priors.get(b.label),
                  init_mask=None if init_masks is None else init_masks.get(b.label))
             for b in prompts for o in orders]
    check_cancel(cancel, "propagation")
    common = {"cancel": cancel, "stop_when_empty": stop_when_empty, "grad": grad,
              "cache_mb": cache_mb, "logits": logits}

    def slice_reporter(first: int) -> Callable[[int, int, Any], None] | None:
        if on_slice is None:
            return None

        def on_frame(i: int, f: int, prob: Any) -> None:
            mask = (prob.detach() > threshold).cpu().numpy()
            on_slice(walks[first + i].box.label, int(f), mask)
        return on_frame

    if share:
        seqs = run_walks(model, frames, walks, progress=progress, on_frame=slice_reporter(0),
                         **common)
    else:  # one pass per structure (its directions still share its key frame)
        seqs, offset = [], 0
        for i, box in enumerate(prompts):
            def report(done: int, _t: int, _offset: int = offset) -> None:
                if progress is not None:
                    progress(_offset + done, total)

            mine = walks[i * len(orders):(i + 1) * len(orders)]
            seqs.extend(run_walks(model, frames, mine, progress=report,
                                  on_frame=slice_reporter(i * len(orders)), **common))
            offset += sum(n_visited(n, w.key_index, w.order) for w in mine)
    probs: dict[int, np.ndarray] = {}
    scores: dict[int, np.ndarray] = {}  # what the decision thresholds: probability or logit
    tensors: dict[int, Any] = {}
    for i, box in enumerate(prompts):
        parts = dict(zip(orders, seqs[i * len(orders):(i + 1) * len(orders)]))
        p = combine_walks(parts, box.index, mode, min_confidence, threshold, logits=logits)
        if logits:
            scores[box.label] = p.detach().float().cpu().numpy()
            p = p.sigmoid()
        if grad:
            tensors[box.label] = p
        probs[box.label] = p.detach().float().cpu().numpy()
    cut = 0.0 if logits else threshold
    scores = scores or probs
    masks = structure_masks(scores, threshold=cut, keep_largest=keep_largest,
                            connectivity=connectivity)
    labels = merge_structures(scores, threshold=cut, keep_largest=keep_largest,
                              nested_fraction=nested_fraction, masks=masks)
    params = {"model": getattr(model, "name", type(model).__name__), "mode": mode,
              "keep_largest": keep_largest, "stop_when_empty": stop_when_empty,
              "threshold": threshold, "decision": decision,
              "connectivity": 6 if connectivity is None else int(connectivity),
              "min_confidence": min_confidence,
              "nested_fraction": nested_fraction, "chain": "full" if priors is None else "per-slice",
              "prompt": "box" if not init_masks else "mask"}
    return PropagationResult(labels, probs, list(prompts), params, tensors, masks)
