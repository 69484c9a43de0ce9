"""Corrections: prompts after a structure's round 0 (:func:`round0_length`) that refine its
result on the slices the backend's ``correct`` returns (``docs/design.md``, "Correction
rounds"); videos, gradients, priors and rule ``NONE`` propagate the whole set at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from napari_segeval.models.base import Corrections
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import Point, PromptSet
from napari_segeval.propagation.masks import largest_component
from napari_segeval.propagation.options import PropagationOptions
from napari_segeval.propagation.result import StructureResult, extent


def round0_length(prompts: PromptSet, rule: Corrections = Corrections.POINTS) -> int:
    """Number of leading prompts that are the set's round 0 under ``rule``.

    ``POINTS``: up to the last box or mask prompt; ``BOXES``: up to and including the first
    box; ``NONE`` (or no such prompt): the whole set.
    """
    items = prompts.prompts
    if rule is Corrections.BOXES:
        first = next((i for i, p in enumerate(items) if isinstance(p, Box)), None)
        return len(items) if first is None else first + 1
    if rule is Corrections.NONE:
        return len(items)
    last = max((i for i, p in enumerate(items) if not isinstance(p, Point)), default=None)
    return len(items) if last is None else last + 1


def rule_of(model: Any) -> Corrections:
    """The correction rule ``model`` declares (``model.capabilities.corrections``)."""
    return model.capabilities.corrections


def corrects(model: Any, options: PropagationOptions, priors: Any = None) -> bool:
    """Whether prompts after round 0 are corrections for ``model`` with ``options``."""
    return (
        rule_of(model) is not Corrections.NONE
        and options.mode == "volume"
        and not options.grad
        and priors is None
    )


def head(prompts: PromptSet, k: int) -> PromptSet:
    """The set of the first ``k`` prompts."""
    return PromptSet(prompts.label, tuple(prompts.prompts[:k]))


def kept_voxels(
    prompts: PromptSet, rule: Corrections = Corrections.POINTS, mask: np.ndarray | None = None
) -> list[tuple[int, int, int]]:
    """Voxels whose components are kept beside the largest.

    ``POINTS``: ``(slice, y, x)`` of the positive points after round 0. ``BOXES``: the voxels
    of ``mask`` inside each box of the set, on its slice.
    """
    if rule is Corrections.BOXES:
        out = []
        for b in prompts.boxes:
            if mask is not None and 0 <= b.index < mask.shape[0]:
                ys, xs = np.nonzero(mask[b.index, b.y0 : b.y1, b.x0 : b.x1])
                out += [(int(b.index), int(y) + b.y0, int(x) + b.x0) for y, x in zip(ys, xs)]
        return out
    return [
        (int(p.index), *p.pixel)
        for p in prompts.prompts[round0_length(prompts, rule) :]
        if isinstance(p, Point) and p.positive
    ]


def _result(
    label: int,
    probs: np.ndarray,
    mask: np.ndarray,
    options: PropagationOptions,
    keep: list | tuple = (),
) -> StructureResult:
    """A structure's result from full-size probabilities and mask (largest component kept)."""
    shape = tuple(probs.shape)
    if options.keep_largest and mask.any():
        mask = largest_component(mask, options.connectivity, keep)
    offset, crop = extent(probs != 0)
    return StructureResult(label, offset, probs[crop].copy(), mask[crop].copy(), shape)


def apply_correction(
    model: Any,
    frames: Any,
    result: StructureResult,
    prompts: PromptSet,
    options: PropagationOptions,
    min_confidence: float | None,
    *,
    cancel: Any = None,
    on_slice: Callable[[int, int, np.ndarray], None] | None = None,
) -> StructureResult:
    """``result`` corrected by the last prompt of ``prompts``: the slices the backend returns
    take its probabilities and their decision, every other slice keeps its own.
    """
    probs, mask = result.full_probabilities(), result.full_mask()
    threshold = 0.5 if options.logits else float(options.threshold)
    changed = model.correct(
        frames, prompts, mask.copy(), min_confidence=min_confidence, cancel=cancel
    )
    for f, p in sorted(changed.items()):
        probs[f] = p
        mask[f] = p > threshold
        if on_slice is not None:
            on_slice(prompts.label, int(f), mask[f].copy())
    return _result(prompts.label, probs, mask, options, kept_voxels(prompts, rule_of(model), mask))


def correct_structures(
    model: Any,
    frames: Any,
    results: dict[int, StructureResult],
    sets: dict[int, PromptSet],
    done: dict[int, int],
    options: PropagationOptions,
    min_confidence: float | None,
    progress: Callable[[int, int], None] | None,
    before: int,
    total: int,
    **run: Any,
) -> dict[int, StructureResult]:
    """Each structure of ``sets``: its result (of its first ``done`` prompts) corrected by each
    later prompt (:func:`apply_correction`; ``run``: ``cancel``, ``on_slice``), one progress
    step each, counted from ``before`` of ``total``."""
    out = {}
    for lab, s in sets.items():
        result = results[lab]
        for i in range(done[lab], len(s)):
            result = apply_correction(
                model, frames, result, head(s, i + 1), options, min_confidence, **run
            )
            before += 1
            if progress is not None:
                progress(before, total)
        out[lab] = result
    return out


def shifted_progress(
    progress: Callable[[int, int], None] | None, before: int, total: int
) -> Callable[[int, int], None] | None:
    """``progress`` of a part that starts after ``before`` of ``total`` steps."""
    if progress is None:
        return None
    return lambda done, _t: progress(before + done, total)


__all__ = ["apply_correction", "correct_structures", "corrects", "head", "round0_length", "rule_of"]
