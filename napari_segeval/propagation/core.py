"""Bidirectional (volume) and forward (video) propagation for any promptable backend.

Each structure is prompted by a :class:`~napari_segeval.prompts.prompt_set.PromptSet`
(boxes, positive and negative points, mask prompts on any slices/frames; a single
box is the one-line case). The MedSAM2 recipe, generalised to several conditioning
frames as SAM2's video predictor does it: give every prompt, propagate forward from
the first conditioning frame to the last slice, reset and give the prompts again,
propagate backward from the last conditioning frame to the first slice, take the
union (voxel-wise maximum of the probabilities where both walks reached a slice; the
other walk's values elsewhere), and keep the largest 3D connected component (face
connectivity, 6 neighbours in 3D, by default; ``connectivity=26``: MedSAM2's
scikit-image default). Each walk applies the prompts of every conditioning frame it
reaches (:class:`~napari_segeval.models.walk.Walk`). Videos are propagated forward
only from the first prompted frame; earlier frames stay background. Several
structures are merged into one label map; where two structures claim a voxel the
higher probability wins, except that a structure enclosed by another (a lesion inside
its organ) wins its overlap with it. Each structure's own mask, before merging, is
kept too (:attr:`PropagationResult.masks`), for scoring each structure on its own
propagation as MedSAM2 does. The settings are one :class:`~.options.PropagationOptions`.
For a backend with ``correct`` (the built-in model), the points after a structure's
last box or mask prompt in a volume are not walked: each is a local correction of the
result before it (:mod:`.corrections`).

Memory: each structure's result is kept at the size of its own extent
(:class:`~.result.StructureResult`, the bounding box of what its walks computed), and
the label map is merged from these crops, so a case with many structures does not hold
a full-size volume per structure; full-size arrays are made on request.

Foreground decision (``decision``): ``"probability"`` (default) keeps voxels
whose probability is above ``threshold``; ``"logit"`` (MedSAM2's scripts)
keeps voxels whose logit is above 0, taken from the backend's logits when it
has them (``walk_logits``: MedSAM2), else from the logit of its probability (the
default ``walk_logits``). The two agree except where float32's sigmoid rounds a tiny positive logit to
exactly 0.5.

Several structures for the price of one (``share=True``, the default): every
direction of every structure is a :class:`~napari_segeval.models.walk.Walk`, and
the backend gets them all in one ``propagate_walks`` call, so it can share per-frame
work between structures and directions (MedSAM2 encodes each frame once per case,
within ``cache_mb``) and batch the walks of one step. Each
structure keeps its own prompt and memory: the probabilities are the same as with
one pass per structure (``share=False``).

Confidence stop (``min_confidence``): walking away from the key
slice, each direction ends at the first slice (after its last conditioning
slice) whose *confidence*, the mean
probability over the voxels predicted as foreground (``p > threshold``), is
below ``min_confidence``; that slice and every later one become background.
Rationale: a well-calibrated model is confident inside an object it tracks
(mean foreground probability near 1) and hesitant when its prior mask has
slid onto tissue whose outline no longer matches the mask (the typical leak at
the end of a structure); such a leak stays connected to the object, so
keep-largest-component cannot remove it. The slices up to the walk's last
conditioning slice are never cut (they lie between prompts a person placed).
The decision uses detached values; the kept slices stay differentiable. The
default ``"auto"`` uses the model's own calibrated value, which it declares as
``capabilities.stop_confidence`` (the built-in model: 0.8, chosen on tuning phantoms
with seeds 500-509, disjoint from training and benchmark seeds), and no stop for
models that declare none (MedSAM2 keeps its published recipe).

Watching it happen (``on_slice``): :func:`propagate_case` can report each
structure's mask on each slice as soon as the backend has computed it (the key
slice first), so a viewer can show a wrong start at once: every backend reports each
step to the walk options' ``on_frame(walk, frame, prob)``. The reports only read the
probabilities: the result is the same with or without ``on_slice``; they come before the confidence stop, the largest-component
step and the merge, which the final label map applies.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval.models.base import Corrections, ProgressFn, PromptableModel, check_prompt_kinds
from napari_segeval.models.walk import Walk, WalkOptions, n_visited
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet
from napari_segeval.propagation.corrections import (
    apply_corrections,
    corrects,
    head,
    round0_length,
    rule_of,
)
from napari_segeval.propagation.masks import largest_component, merge_crops
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult, StructureResult
from napari_segeval.propagation.trace import structure_trace
from napari_segeval.propagation.walks import resolve_min_confidence, structure_crop

if TYPE_CHECKING:  # pragma: no cover
    import threading
    from collections.abc import Callable, Mapping

    import torch

MODES = ("volume", "video")


def total_steps(
    n_frames: int, prompts: Any, mode: str, *, corrections: Corrections = Corrections.NONE
) -> int:
    """Number of model steps (progress total) for ``prompts`` on ``n_frames``.

    ``prompts``: boxes and/or prompt sets (:func:`~.options.as_prompt_sets`).
    ``corrections``: the rule by which prompts after round 0 are corrections
    (:func:`~.corrections.corrects`; ``NONE`` when they are not): then a set counts the
    walks of its round 0 and one step per correction.

    Examples
    --------
    >>> total_steps(10, [Box(0, 0, 2, 2, index=4)], "volume")
    11
    >>> total_steps(10, [Box(0, 0, 2, 2, index=4)], "video")
    6
    >>> s = PromptSet.of([Box(0, 0, 2, 2, index=4), Point(1, 1, index=9)])
    >>> total_steps(10, [s], "volume"), total_steps(10, [s], "volume",
    ...                                            corrections=Corrections.POINTS)
    (16, 12)
    """
    total = 0
    for s in as_prompt_sets(prompts).values():
        if corrections is not Corrections.NONE:
            k = round0_length(s, corrections)
            total += len(s) - k
            s = head(s, k)
        total += n_visited(n_frames, s.first_frame, "forward")
        if mode == "volume":
            total += n_visited(n_frames, s.last_frame, "backward")
    return total


def make_walks(
    sets: Mapping[int, PromptSet],
    options: PropagationOptions,
    priors: Mapping[int, Any] | None = None,
) -> list[Walk]:
    """The walks of ``sets``: per structure, forward from its first conditioning frame
    and (volumes) backward from its last one.

    Examples
    --------
    >>> s = PromptSet.of([Box(0, 0, 2, 2, index=2), Point(1, 1, index=5, positive=False)])
    >>> [(w.start, w.order) for w in make_walks({1: s}, PropagationOptions())]
    [(2, 'forward'), (5, 'backward')]
    """
    return [
        Walk.of(s, order, prior_volume=None if priors is None else priors.get(lab))
        for lab, s in sets.items()
        for order in options.orders
    ]


def _reporter(
    on_slice: Any, walks: list[Walk], first: int, threshold: float
) -> Callable[[int, int, Any], None] | None:
    if on_slice is None:
        return None

    def on_frame(i: int, f: int, prob: Any) -> None:
        mask = (prob.detach() > threshold).cpu().numpy()
        on_slice(walks[first + i].label, int(f), mask)

    return on_frame


def _structure(
    label: int, parts: list, shape: tuple, options: PropagationOptions, min_confidence: float | None
) -> StructureResult:
    """A structure's result from its walks' outputs: crop, decision, largest component."""
    offset, crop = structure_crop(parts, min_confidence, options.threshold, options.logits)
    scores = None
    if options.logits:
        scores = crop.detach().float().cpu().numpy()
        crop = crop.sigmoid()
    probs = crop.detach().float().cpu().numpy()
    mask = (scores if scores is not None else probs) > options.cut
    if options.keep_largest and mask.size:
        mask = largest_component(mask, options.connectivity)
    trace = structure_trace(parts, min_confidence, options.threshold, options.logits)
    return StructureResult(label, offset, probs, mask, shape, crop if options.grad else None, trace)


def propagate_structures(
    model: PromptableModel,
    frames: Any,
    sets: Mapping[int, PromptSet],
    options: PropagationOptions | None = None,
    *,
    priors: Mapping[int, Any] | None = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    on_slice: Any = None,
    cache: Any = None,
) -> dict[int, StructureResult]:
    """Each structure's :class:`~.result.StructureResult` (no merging; see
    :func:`propagate_case` for the arguments). Used by :func:`propagate_case` and by
    :class:`~.session.PropagationSession` to re-propagate only some structures."""
    options = options or PropagationOptions()
    check_prompt_kinds(model.capabilities, sets.values(), model.name)
    min_confidence = resolve_min_confidence(model, options.min_confidence)
    n = int(frames.shape[0])
    correcting = corrects(model, options, priors)
    rule = rule_of(model) if correcting else Corrections.NONE
    total = total_steps(n, sets, options.mode, corrections=rule)
    walked = total  # the walks' steps; each correction is one more
    if correcting:  # round 0 first, then each correction in order
        full_sets = dict(sets)
        sets = {lab: head(s, round0_length(s, rule)) for lab, s in sets.items()}
        walked = total_steps(n, sets, options.mode)
    shape = tuple(int(v) for v in frames.shape[:3])
    walks = make_walks(sets, options, priors)
    check_cancel(cancel, "propagation")
    walk = WalkOptions(
        cancel=cancel,
        stop_when_empty=options.stop_when_empty,
        grad=options.grad,
        cache_mb=options.cache_mb,
        crops=True,
        features=cache,
    )
    run = model.walk_logits if options.logits else model.propagate_walks
    k = len(options.orders)
    if options.share:
        outs = run(
            frames,
            walks,
            replace(
                walk,
                progress=_shifted(progress, 0, total) if correcting else progress,
                on_frame=_reporter(on_slice, walks, 0, options.threshold),
            ),
        )
    else:  # one pass per structure (its directions still share its conditioning)
        outs, done = [], 0
        for i in range(0, len(walks), k):
            mine = walks[i : i + k]
            mine_options = replace(
                walk,
                progress=_shifted(progress, done, total),
                on_frame=_reporter(on_slice, walks, i, options.threshold),
            )
            outs.extend(run(frames, mine, mine_options))
            done += sum(n_visited(n, w.start, w.order) for w in mine)
    results = {}
    for i, label in enumerate(sets):
        parts = list(zip(walks[i * k : (i + 1) * k], outs[i * k : (i + 1) * k]))
        results[label] = _structure(label, parts, shape, options, min_confidence)
        outs[i * k : (i + 1) * k] = [None] * k  # free the walks as soon as they are used
    if correcting:
        for label, s in full_sets.items():
            results[label] = apply_corrections(
                model,
                frames,
                results[label],
                s,
                len(sets[label]),
                options,
                min_confidence,
                cancel=cancel,
                on_slice=on_slice,
                progress=_shifted(progress, walked, total),
            )
            walked += len(s) - len(sets[label])
    return results


def _shifted(progress: ProgressFn | None, before: int, total: int) -> ProgressFn | None:
    """``progress`` of a part that starts after ``before`` steps of ``total``:
    a part's ``(done, its total)`` is heard as ``(before + done, total)``."""
    if progress is None:
        return None
    return lambda done, _t: progress(before + done, total)


def merge_results(
    structures: Mapping[int, StructureResult],
    shape: tuple,
    options: PropagationOptions | None = None,
) -> np.ndarray:
    """The label map of several structures' results (:func:`~.masks.merge_crops`)."""
    options = options or PropagationOptions()
    return merge_crops(
        {lab: (s.offset, s.probabilities, s.mask) for lab, s in structures.items()},
        tuple(shape),
        nested_fraction=options.nested_fraction,
    )


def describe_prompts(sets: Mapping[int, PromptSet]) -> str:
    """The prompt kinds used, for provenance: ``"box"``, ``"mask"``, ``"box+point"``...

    Examples
    --------
    >>> describe_prompts({1: PromptSet.of([Box(0, 0, 2, 2), Point(1, 1)])})
    'box+point'
    """
    kinds = {type(p) for s in sets.values() for p in s.prompts}
    names = [
        name for cls, name in ((Box, "box"), (Point, "point"), (MaskPrompt, "mask")) if cls in kinds
    ]
    return "+".join(names)


def record(
    model: Any,
    sets: Mapping[int, PromptSet],
    options: PropagationOptions,
    min_confidence: float | None,
    per_slice: bool,
) -> dict:
    """The ``params`` of a :class:`~.result.PropagationResult`."""
    return {
        "model": model.name,
        "mode": options.mode,
        "keep_largest": options.keep_largest,
        "stop_when_empty": options.stop_when_empty,
        "threshold": options.threshold,
        "decision": options.decision,
        "connectivity": 6 if options.connectivity is None else int(options.connectivity),
        "min_confidence": min_confidence,
        "nested_fraction": options.nested_fraction,
        "chain": "per-slice" if per_slice else "full",
        "prompt": describe_prompts(sets),
        "conditioning_frames": {lab: list(s.frames) for lab, s in sets.items()},
    }


def check_prompts(sets: Mapping[int, PromptSet], frames: Any, mode: str) -> None:
    """Refuse prompts that do not fit ``frames`` (one line, :class:`InvalidPromptError`)."""
    shape = tuple(int(v) for v in frames.shape[:3])
    for s in sets.values():
        s.validate(shape, where="slice" if mode == "volume" else "frame")


def propagate_structure(
    model: PromptableModel,
    frames: Any,
    prompts: Box | PromptSet,
    options: PropagationOptions | None = None,
    *,
    prior_volume: Any = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> torch.Tensor:
    """Probability ``(n, H, W)`` (a tensor, differentiable with ``options.grad``) of one
    structure from its prompts (a box on frame ``box.index``, or a prompt set).

    ``progress`` receives per-step counts for this structure only; ``prior_volume``
    (``(n, H, W)``, optional) conditions every frame after the start frame on this
    volume instead of the model's own previous output (see
    :meth:`napari_segeval.models.base.PromptableModel.propagate`). The options'
    ``mode``, ``stop_when_empty``, ``grad``, ``min_confidence`` and ``threshold``
    apply.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> box = Box(2, 2, 4, 4, index=2)
    >>> p = propagate_structure(ThresholdPromptModel(), np.ones((5, 8, 8)), box)
    >>> (p.sum(dim=(1, 2)) > 0).tolist()
    [True, True, True, True, True]
    """
    import torch

    options = (options or PropagationOptions()).replace(keep_largest=False, share=True)
    sets = as_prompt_sets([prompts])
    check_prompts(sets, frames, options.mode)
    label = next(iter(sets))
    res = propagate_structures(
        model,
        frames,
        sets,
        options,
        priors=None if prior_volume is None else {label: prior_volume},
        progress=progress,
        cancel=cancel,
    )[label]
    return res.full_tensor() if options.grad else torch.from_numpy(res.full_probabilities())


def propagate_case(
    model: PromptableModel,
    frames: Any,
    prompts: Any,
    options: PropagationOptions | None = None,
    *,
    priors: dict[int, Any] | None = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    on_slice: Callable[[int, int, np.ndarray], None] | None = None,
    cache: Any = None,
) -> PropagationResult:
    """Propagate every structure's prompts through ``frames`` and merge the structures.

    Parameters
    ----------
    model : PromptableModel
        Backend (see :mod:`napari_segeval.models.base`).
    frames : tensor or array ``(n, H, W[, C])``
        Input in the model's normalized units (``model.preprocess(...)``).
    prompts : dict of int to PromptSet, or list of PromptSet and Box
        One prompt set per structure (a :class:`Box` is the one-line set of its
        structure ``box.label``): :func:`~.options.as_prompt_sets`.
    options : PropagationOptions, optional
        Mode, decision, post-processing, stops, gradients, sharing (default: the
        project's recipe, :class:`~.options.PropagationOptions`).
    priors : dict of int to array, optional
        Per structure, an ``(n, H, W)`` volume that conditions each frame after the
        start frame instead of the model's own previous output (``prior_volume``):
        with a clean prediction, frames are segmented one by one, as in per-slice
        attacks.
    progress : callable, optional
        ``progress(done, total)`` after each slice/frame of every walk.
    cancel : threading.Event, optional
        Set it to stop: :class:`napari_segeval._cancel.Cancelled` is raised and
        nothing is returned.
    on_slice : callable, optional
        ``on_slice(label, index, mask)``: structure ``label``'s boolean ``(H, W)``
        mask (``probability > threshold``) on slice/frame ``index``, called (from
        the thread that runs the propagation) as soon as it is computed, each walk's
        start slice first (module doc). Before post-processing; never changes the
        result.
    cache : optional
        The backend's cache for this case (``model.feature_cache()``, MedSAM2's image
        features): given to every call on the same ``frames`` tensor, a correction
        does not encode the frames again. Never changes the result.

    Raises
    ------
    napari_segeval.InvalidPromptError
        A prompt outside the frames, on a frame that does not exist, a mask prompt
        of another size, a structure with only negative points, or a prompt the
        model cannot take (one line).

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> res = propagate_case(ThresholdPromptModel(), np.ones((6, 8, 8)),
    ...                      [Box(2, 2, 5, 5, index=3, label=4)])
    >>> res.labels.shape, sorted(res.probabilities), sorted(res.masks)
    ((6, 8, 8), [4], [4])
    >>> s = PromptSet.of([Box(2, 2, 5, 5, index=1), Box(2, 2, 6, 6, index=4)])
    >>> res = propagate_case(ThresholdPromptModel(), np.ones((6, 8, 8)), {1: s},
    ...                      PropagationOptions(mode="video"))
    >>> res.labels.any(axis=(1, 2)).tolist(), res.params["conditioning_frames"]
    ([False, True, True, True, True, True], {1: [1, 4]})
    """
    options = options or PropagationOptions()
    sets = as_prompt_sets(prompts)
    check_prompts(sets, frames, options.mode)
    structures = propagate_structures(
        model,
        frames,
        sets,
        options,
        priors=priors,
        progress=progress,
        cancel=cancel,
        on_slice=on_slice,
        cache=cache,
    )
    shape = tuple(int(v) for v in frames.shape[:3])
    labels = merge_results(structures, shape, options)
    tensors = {lab: s.full_tensor() for lab, s in structures.items()} if options.grad else {}
    params = record(
        model,
        sets,
        options,
        resolve_min_confidence(model, options.min_confidence),
        priors is not None,
    )
    return PropagationResult(labels, structures, dict(sets), params, tensors)
