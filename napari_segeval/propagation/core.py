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
from scipy import ndimage

from napari_segeval._cancel import check_cancel
from napari_segeval.models.base import ProgressFn, PromptableModel, Walk, n_visited
from napari_segeval.prompts.box import Box

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


def resolve_min_confidence(model: Any, min_confidence: float | str | None) -> float | None:
    """``"auto"`` -> ``model.stop_confidence`` (``None`` when absent); else the value.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> resolve_min_confidence(ThresholdPromptModel(), "auto") is None
    True
    >>> resolve_min_confidence(ThresholdPromptModel(), 0.7)
    0.7
    """
    if isinstance(min_confidence, str):
        if min_confidence != "auto":
            raise ValueError(f"min_confidence must be a number, None or 'auto', "
                             f"got {min_confidence!r}")
        value = getattr(model, "stop_confidence", None)
        return None if value is None else float(value)
    return None if min_confidence is None else float(min_confidence)


def confidence_stop(probs: Any, min_confidence: float | None, threshold: float = 0.5) -> int:
    """Number of leading frames of one direction to keep (see the module doc).

    ``probs`` is ``(m, H, W)`` with the key frame first. Frames without
    foreground do not stop the walk (``stop_when_empty`` handles them).

    Examples
    --------
    >>> import torch
    >>> p = torch.zeros(4, 2, 2); p[0, 0, 0] = 0.95; p[1, 0, 0] = 0.9; p[2, 0, 0] = 0.6
    >>> confidence_stop(p, 0.75), confidence_stop(p, None)
    (2, 4)
    """
    m = int(probs.shape[0])
    if min_confidence is None or m <= 1:
        return m
    p = probs.detach().float()
    fg = p > threshold
    count = fg.flatten(1).sum(dim=1)
    mean = (p * fg).flatten(1).sum(dim=1) / count.clamp(min=1)
    low = ((count > 0) & (mean < float(min_confidence))).tolist()
    for j in range(1, m):
        if low[j]:
            return j
    return m


def _orders(mode: str) -> tuple[str, ...]:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return ("forward", "backward") if mode == "volume" else ("forward",)


def _takes(method: Any, name: str) -> bool:
    """Whether ``method`` names the keyword ``name`` (a bare ``**kwargs`` does not count)."""
    import inspect

    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _report_walk(on_frame: Callable[[int, int, Any], None], i: int, walk: Walk, n: int,
                 seq: Any) -> None:
    """Report a finished walk's frames (backends without ``on_frame``)."""
    for j, f in enumerate(walk.frames(n).tolist()):
        on_frame(i, f, seq[j].detach())


def run_walks(model: PromptableModel, frames: Any, walks: list[Walk], *,
              progress: ProgressFn | None = None, cancel: threading.Event | None = None,
              stop_when_empty: bool = True, grad: bool = False,
              cache_mb: float | None = None,
              on_frame: Callable[[int, int, Any], None] | None = None,
              logits: bool = False) -> list[torch.Tensor]:
    """Probabilities of each walk: one ``propagate_walks`` call, or one ``propagate`` each.

    ``progress(done, total)`` counts the steps of all walks. ``on_frame(i, frame,
    prob)`` (optional) hears walk ``i``'s probability on each frame as it is
    computed, or when the walk returns for backends that cannot report steps
    (module doc); it never changes the result. ``logits=True`` returns logits
    instead: the backend's own (``walk_logits``) when it has them, else the logit
    of its probabilities (``on_frame`` still hears probabilities).

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> box = Box(2, 2, 4, 4, index=2)
    >>> walks = [Walk(2, box, "forward"), Walk(2, box, "backward")]
    >>> [tuple(p.shape) for p in run_walks(ThresholdPromptModel(), np.ones((5, 8, 8)), walks)]
    [(3, 8, 8), (3, 8, 8)]
    """
    n = int(frames.shape[0])
    if logits and hasattr(model, "walk_logits"):
        import torch

        extra = {} if cache_mb is None else {"cache_mb": cache_mb}
        live = on_frame is not None and _takes(model.walk_logits, "on_frame")
        if live:
            extra["on_frame"] = on_frame
        seqs = model.walk_logits(frames, walks, progress=progress, cancel=cancel,
                                 stop_when_empty=stop_when_empty, grad=grad, **extra)
        if on_frame is not None and not live:
            for i, (w, seq) in enumerate(zip(walks, seqs)):
                _report_walk(on_frame, i, w, n, torch.sigmoid(seq.detach().float()))
        return seqs
    if logits:
        import torch

        probs = run_walks(model, frames, walks, progress=progress, cancel=cancel,
                          stop_when_empty=stop_when_empty, grad=grad, cache_mb=cache_mb,
                          on_frame=on_frame)
        return [torch.logit(p.float()) for p in probs]
    if hasattr(model, "propagate_walks"):
        extra = {} if cache_mb is None else {"cache_mb": cache_mb}
        live = on_frame is not None and _takes(model.propagate_walks, "on_frame")
        if live:
            extra["on_frame"] = on_frame
        seqs = model.propagate_walks(frames, walks, progress=progress, cancel=cancel,
                                     stop_when_empty=stop_when_empty, grad=grad, **extra)
        if on_frame is not None and not live:
            for i, (w, seq) in enumerate(zip(walks, seqs)):
                _report_walk(on_frame, i, w, n, seq)
        return seqs
    total = sum(n_visited(n, w.key_index, w.order) for w in walks)
    live = on_frame is not None and _takes(model.propagate, "on_frame")
    out, offset = [], 0
    for number, w in enumerate(walks):
        def cb(i: int, _t: int, _offset: int = offset) -> None:
            if progress is not None:
                progress(_offset + i, total)

        extra = {} if w.prior_volume is None else {"prior_volume": w.prior_volume}
        if w.init_mask is not None:
            extra["init_mask"] = w.init_mask
        if live:
            extra["on_frame"] = lambda _i, f, p, _n=number: on_frame(_n, f, p)
        out.append(model.propagate(frames, w.key_index, w.box, w.order, progress=cb,
                                   cancel=cancel, stop_when_empty=stop_when_empty, grad=grad,
                                   **extra))
        if on_frame is not None and not live:
            _report_walk(on_frame, number, w, n, out[-1])
        offset += n_visited(n, w.key_index, w.order)
    return out


def combine_walks(parts: dict[str, torch.Tensor], key_index: int, mode: str,
                  min_confidence: float | None, threshold: float = 0.5,
                  logits: bool = False) -> torch.Tensor:
    """One structure's ``(n, H, W)`` probability from its walks (confidence stop, then union).

    ``parts`` maps ``"forward"`` (and ``"backward"`` for volumes) to the walk's
    probabilities in visit order (logits with ``logits=True``: the confidence
    stop reads their sigmoid at 0.5, cut and unvisited frames get ``-inf``).

    Examples
    --------
    >>> import torch
    >>> fwd, bwd = torch.full((2, 1, 1), 0.9), torch.full((3, 1, 1), 0.8)
    >>> combine_walks({"forward": fwd, "backward": bwd}, 2, "volume", None).flatten().tolist()
    [0.800000011920929, 0.800000011920929, 0.8999999761581421, 0.8999999761581421]
    """
    import torch

    empty = float("-inf") if logits else 0.0
    cut = {}
    for order, seq in parts.items():
        if logits:
            keep = confidence_stop(torch.sigmoid(seq), min_confidence, 0.5)
        else:
            keep = confidence_stop(seq, min_confidence, threshold)
        if keep < seq.shape[0]:
            seq = torch.cat([seq[:keep], torch.full_like(seq[keep:], empty)], dim=0)
        cut[order] = seq
    fwd = cut["forward"]
    h, w = fwd.shape[1:]
    pieces = []
    if mode == "volume":
        bwd = cut["backward"]
        pieces.append(torch.flip(bwd[1:], dims=(0,)))
        pieces.append(torch.maximum(fwd[:1], bwd[:1]))
    else:
        pieces.append(torch.full((key_index, h, w), empty, dtype=fwd.dtype, device=fwd.device))
        pieces.append(fwd[:1])
    pieces.append(fwd[1:])
    return torch.cat(pieces, dim=0)


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


def connectivity_structure(ndim: int, connectivity: int | None = None) -> np.ndarray:
    """Neighbourhood for ``connectivity`` neighbours (``None``: face neighbours).

    3D: 6 (faces), 18 (faces and edges) or 26 (full, scikit-image's default);
    2D: 4 or 8; in any dimension, ``3**ndim - 1`` is full connectivity.

    Examples
    --------
    >>> int(connectivity_structure(3, 26).sum()) - 1, int(connectivity_structure(3).sum()) - 1
    (26, 6)
    """
    options = {}
    for rank in range(1, ndim + 1):
        st = ndimage.generate_binary_structure(ndim, rank)
        options[int(st.sum()) - 1] = st
    if connectivity is None:
        return options[2 * ndim]
    if int(connectivity) not in options:
        raise ValueError(f"connectivity for {ndim}D must be one of {sorted(options)}, "
                         f"got {connectivity!r}")
    return options[int(connectivity)]


def largest_component(mask: np.ndarray, connectivity: int | None = None) -> np.ndarray:
    """Keep the largest connected component (any dimension).

    ``connectivity``: number of neighbours (:func:`connectivity_structure`);
    ``None`` (default): face connectivity (6 in 3D). MedSAM2 keeps the largest
    26-connected component (scikit-image's default).

    Examples
    --------
    >>> m = np.zeros((1, 6, 6), bool); m[0, :2, :2] = True; m[0, 4:, 3:] = True
    >>> int(largest_component(m).sum())
    6
    >>> d = np.zeros((3, 3, 3), bool); d[0, 0, 0] = d[1, 1, 1] = d[2, 2, 2] = True
    >>> int(largest_component(d).sum()), int(largest_component(d, 26).sum())
    (1, 3)
    """
    lab, n = ndimage.label(mask, structure=connectivity_structure(mask.ndim, connectivity))
    if n <= 1:
        return mask.astype(bool, copy=True)
    sizes = np.bincount(lab.ravel())
    sizes[0] = 0
    return lab == int(np.argmax(sizes))


def structure_masks(probabilities: dict[int, np.ndarray], *, threshold: float = 0.5,
                    keep_largest: bool = True, connectivity: int | None = None
                    ) -> dict[int, np.ndarray]:
    """Each structure's boolean mask: above ``threshold``, then its largest component.

    Examples
    --------
    >>> a = np.array([[[0.9, 0.0, 0.7]]], np.float32)
    >>> structure_masks({1: a})[1].tolist(), structure_masks({1: a}, keep_largest=False)[1].tolist()
    ([[[True, False, False]]], [[[True, False, True]]])
    """
    out = {}
    for lab, p in probabilities.items():
        mask = np.asarray(p) > threshold
        out[lab] = largest_component(mask, connectivity) if keep_largest else mask
    return out


def merge_structures(probabilities: dict[int, np.ndarray], *, threshold: float = 0.5,
                     keep_largest: bool = True, nested_fraction: float | None = 0.5,
                     connectivity: int | None = None,
                     masks: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """One label map from per-structure probabilities; overlaps go to the higher probability.

    Nested structures: when at least ``nested_fraction`` of a structure's mask
    lies inside the mask of a larger structure (a lesion inside its organ), the
    enclosed structure wins their whole overlap, as in reference label maps where
    the lesion label is painted over the organ. ``None`` disables the rule.
    ``connectivity`` is that of :func:`largest_component`; ``masks`` (from
    :func:`structure_masks`) skips recomputing the per-structure masks.

    Examples
    --------
    >>> a = np.array([[[0.9, 0.6, 0.0]]], np.float32)
    >>> b = np.array([[[0.0, 0.8, 0.7]]], np.float32)
    >>> merge_structures({1: a, 2: b}, keep_largest=False).tolist()
    [[[1, 2, 2]]]
    >>> organ = np.array([[[0.99, 0.99, 0.99, 0.0]]], np.float32)
    >>> lesion = np.array([[[0.0, 0.7, 0.0, 0.0]]], np.float32)
    >>> merge_structures({1: organ, 5: lesion}).tolist()
    [[[1, 5, 1, 0]]]
    """
    ids = sorted(probabilities)
    if not ids:
        raise ValueError("no structures to merge")
    shape = probabilities[ids[0]].shape
    probs = {lab: np.asarray(probabilities[lab], dtype=np.float32) for lab in ids}
    if masks is None:
        masks = structure_masks(probs, threshold=threshold, keep_largest=keep_largest,
                                connectivity=connectivity)
    size = {lab: int(masks[lab].sum()) for lab in ids}
    outers: dict[int, list[int]] = {lab: [] for lab in ids}  # lab -> structures enclosing it
    if nested_fraction is not None:
        for inner in ids:
            for outer in ids:
                if (outer != inner and 0 < size[inner] < size[outer] and
                        (masks[inner] & masks[outer]).sum() >= nested_fraction * size[inner]):
                    outers[inner].append(outer)
    best = np.zeros(shape, np.float32)
    out = np.zeros(shape, np.uint16 if max(ids) > 255 else np.uint8)
    for lab in sorted(ids, key=lambda i: (-size[i], i)):  # enclosing structures first
        prob, mask = probs[lab], masks[lab]
        win = mask & (prob > best)
        if outers[lab]:
            win |= mask & np.isin(out, outers[lab])
        out[win] = lab
        best[win] = prob[win]
    return out


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
