"""Bidirectional (volume) and forward (video) propagation for any promptable backend.

The recipe is in ``docs/design.md`` ("Prompt sets and walks", "Results at the size of each
structure's extent"); ``on_slice`` reports masks before the stops and never changes a result.
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
    correct_structures,
    corrects,
    head,
    round0_length,
    rule_of,
    shifted_progress,
)
from napari_segeval.propagation.masks import largest_component, merge_crops
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult, StructureResult
from napari_segeval.propagation.trace import structure_trace
from napari_segeval.propagation.walks import resolve_min_confidence, structure_crop

if TYPE_CHECKING:  # pragma: no cover
    import threading
    from collections.abc import Callable, Mapping


def total_steps(
    n_frames: int, prompts: Any, mode: str, *, corrections: Corrections = Corrections.NONE
) -> int:
    """Number of model steps (progress total): with ``corrections`` (a correction rule), the
    walks of each set's round 0 and one step per correction."""
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
    """Per structure, a forward walk from its first conditioning frame and (volumes) a backward
    walk from its last one."""
    return [
        Walk.of(s, order, prior_volume=None if priors is None else priors.get(lab))
        for lab, s in sets.items()
        for order in options.orders
    ]


def _reporter(
    on_slice: Any, walks: list[Walk], first: int, threshold: float
) -> Callable[[int, int, Any], None] | None:
    """The walks' ``on_frame`` that reports each frame's mask to ``on_slice`` (None without it)."""
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
    """Each structure's :class:`~.result.StructureResult`, unmerged (arguments: :func:`propagate_case`)."""
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
    # one pass for every walk, or one per structure (its directions share its conditioning)
    step = max(len(walks), 1) if options.share else k
    whole = options.share and not correcting  # one pass counts every step itself
    outs, done = [], 0
    for i in range(0, len(walks), step):
        mine = walks[i : i + step]
        mine_options = replace(
            walk,
            progress=progress if whole else shifted_progress(progress, done, total),
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
        used = {lab: len(s) for lab, s in sets.items()}
        results.update(
            correct_structures(
                model,
                frames,
                results,
                full_sets,
                used,
                options,
                min_confidence,
                progress,
                walked,
                total,
                cancel=cancel,
                on_slice=on_slice,
            )
        )
    return results


def merged(
    model: Any,
    frames: Any,
    structures: Mapping[int, StructureResult],
    sets: Mapping[int, PromptSet],
    options: PropagationOptions,
    per_slice: bool = False,
) -> PropagationResult:
    """The :class:`~.result.PropagationResult` of ``structures``: their label map
    (:func:`~.masks.merge_crops`), the full-size tensors with ``grad``, and its ``params``."""
    min_confidence = resolve_min_confidence(model, options.min_confidence)
    shape = tuple(int(v) for v in frames.shape[:3])
    crops = {lab: (s.offset, s.probabilities, s.mask) for lab, s in structures.items()}
    labels = merge_crops(crops, shape, nested_fraction=options.nested_fraction)
    tensors = {lab: s.full_tensor() for lab, s in structures.items()} if options.grad else {}
    kinds = {type(p) for s in sets.values() for p in s.prompts}  # "box", "box+point" ...
    prompt = [
        name for c, name in ((Box, "box"), (Point, "point"), (MaskPrompt, "mask")) if c in kinds
    ]
    params = {
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
        "prompt": "+".join(prompt),
        "conditioning_frames": {lab: list(s.frames) for lab, s in sets.items()},
    }
    return PropagationResult(labels, dict(structures), dict(sets), params, tensors)


def on_grid(result: PropagationResult, kind: str | None, modality: str | None) -> PropagationResult:
    """``result`` with the image's ``kind`` and ``modality`` recorded, on a 2D image's grid."""
    if kind is not None:
        result.params["kind"] = kind
    if modality is not None:
        result.params["modality"] = modality
    return result.first() if kind == "image" else result


def check_prompts(sets: Mapping[int, PromptSet], frames: Any, mode: str) -> None:
    """Refuse prompts that do not fit ``frames`` (one line, :class:`InvalidPromptError`)."""
    shape = tuple(int(v) for v in frames.shape[:3])
    for s in sets.values():
        s.validate(shape, where="slice" if mode == "volume" else "frame")


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
        One prompt set per structure: :func:`~.options.as_prompt_sets`.
    options : PropagationOptions, optional
        Mode, decision, post-processing, stops, gradients, sharing (default: the recipe).
    priors : dict of int to array, optional
        Per structure, an ``(n, H, W)`` volume that conditions each frame after the start
        frame instead of the model's own previous output (per-slice attacks).
    progress : callable, optional
        ``progress(done, total)`` after each slice/frame of every walk.
    cancel : threading.Event, optional
        Set it to stop: :class:`napari_segeval._cancel.Cancelled` is raised.
    on_slice : callable, optional
        ``on_slice(label, index, mask)``: a structure's boolean ``(H, W)`` mask
        (``probability > threshold``) on a slice as soon as it is computed, before
        post-processing, from the propagating thread.
    cache : optional
        The backend's cache for ``frames`` (``model.feature_cache()``): a correction does not
        encode the frames again.

    Raises
    ------
    napari_segeval.InvalidPromptError
        A prompt outside the frames or the model's prompt kinds (one line).
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
    return merged(model, frames, structures, sets, options, priors is not None)
