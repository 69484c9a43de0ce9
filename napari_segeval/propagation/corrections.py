"""Corrections: prompts that refine a structure's result instead of starting it again.

For a volume and a backend whose :class:`~napari_segeval.models.base.Capabilities` name a
correction rule (``corrections``), a structure's result is built prompt by prompt in
the order the prompts were given:

* its **round 0** propagates as always (both walks from the conditioning slices,
  confidence stop, largest component: :func:`~.core.propagate_structures`): with
  :attr:`~napari_segeval.models.base.Corrections.POINTS` (the built-in model's clicks),
  every prompt up to the set's last box or mask prompt, so a box or mask prompt added
  later starts the structure again from all its prompts; with
  :attr:`~napari_segeval.models.base.Corrections.BOXES` (LiteMedSAM's box chain), every
  prompt up to and including the first box;
* every later prompt is a **correction** of the result of the prompts before it: the
  backend's ``correct`` returns the slices it changes (the built-in model: the clicked
  slice and the neighbours that share its error; LiteMedSAM: the slices its walk from
  the new box reaches), every other slice keeps its probabilities and mask, and the
  largest component is taken again - with every component that holds a positive
  correction point (a click on slices the result missed stays, even where it does not
  touch the rest).

A video, gradients or per-slice priors, and every backend whose rule is
:attr:`~napari_segeval.models.base.Corrections.NONE` (MedSAM2, the threshold model)
propagate the whole set at once, as SAM2's predictor does from its memory of every
prompt. The result of a prompt set is a function of the set alone: a
:class:`~napari_segeval.propagation.session.PropagationSession` applies only the new
corrections to the result it keeps and gets exactly what :func:`~.core.propagate_case`
gets from the whole set.
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
from napari_segeval.propagation.result import StructureResult


def round0_length(prompts: PromptSet, rule: Corrections = Corrections.POINTS) -> int:
    """Number of leading prompts that are the set's round 0 under ``rule`` (module doc).

    ``POINTS``: everything up to the last box or mask prompt (the whole set when it has
    none). ``BOXES``: everything up to and including the first box (the whole set when
    it has none). ``NONE``: the whole set.

    Examples
    --------
    >>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 1, index=3),
    ...                   Box(0, 0, 3, 3, index=7), Point(2, 2, index=4)])
    >>> round0_length(s), round0_length(PromptSet.of([Point(1, 1, index=3)]))
    (3, 1)
    >>> round0_length(s, Corrections.BOXES), round0_length(s, Corrections.NONE)
    (1, 4)
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
    """The correction rule ``model`` declares (``model.capabilities.corrections``).

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> rule_of(ThresholdPromptModel())
    <Corrections.NONE: 'none'>
    """
    return model.capabilities.corrections


def corrects(model: Any, options: PropagationOptions, priors: Any = None) -> bool:
    """Whether prompts after round 0 are corrections for ``model`` with ``options``.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> corrects(ThresholdPromptModel(), PropagationOptions())
    False
    """
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
    """Voxels whose components are kept beside the largest (a person's prompts say the
    structure is there).

    ``POINTS``: ``(slice, y, x)`` of the positive points after round 0 (a click on slices
    the result missed is not dropped). ``BOXES``: the voxels of ``mask`` inside each box
    of the set, on its slice (a box's result is not dropped because a later box's walk
    grew a larger component elsewhere).

    Examples
    --------
    >>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 2, index=6),
    ...                   Point(3, 3, index=7, positive=False)])
    >>> kept_voxels(s)
    [(6, 1, 2)]
    >>> m = np.zeros((3, 4, 4), bool); m[2, 1, 1] = True
    >>> kept_voxels(PromptSet.of([Box(0, 0, 2, 2, index=2)]), Corrections.BOXES, m)
    [(2, 1, 1)]
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
    """A structure's result from full-size probabilities and mask (largest component,
    and the components of ``keep``'s voxels)."""
    shape = tuple(probs.shape)
    if options.keep_largest and mask.any():
        mask = largest_component(mask, options.connectivity, keep)
    found = np.nonzero(probs != 0)
    if found[0].size == 0:
        return StructureResult(
            label, (0, 0, 0), np.zeros((0, 0, 0), np.float32), np.zeros((0, 0, 0), bool), shape
        )
    crop = tuple(slice(int(v.min()), int(v.max()) + 1) for v in found)
    offset = tuple(int(c.start) for c in crop)
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
    """``result`` corrected by the last prompt of ``prompts`` (module doc).

    ``prompts`` is the structure's set up to and including the correction. The
    slices the backend returns take its probabilities and their decision (above
    :attr:`~.options.PropagationOptions.threshold`, or 0.5 with logits); every
    other slice keeps its probabilities and mask; then the largest component.

    Examples
    --------
    >>> from napari_segeval.models.base import Capabilities
    >>> class Add:  # a stand-in backend: the prompted slice becomes its box
    ...     capabilities = Capabilities(corrections=Corrections.BOXES)
    ...     def correct(self, frames, prompts, previous, **kw):
    ...         b = prompts.prompts[-1]
    ...         out = np.zeros(previous.shape[1:], np.float32); out[b.y0:b.y1, b.x0:b.x1] = 1
    ...         return {b.index: out}
    >>> m = np.zeros((3, 4, 4), bool); m[:2, :2, :2] = True
    >>> before = StructureResult(1, (0, 0, 0), m.astype(np.float32), m, m.shape)
    >>> s = PromptSet.of([Box(0, 0, 2, 2, index=0), Box(1, 1, 3, 3, index=2)])
    >>> after = apply_correction(Add(), None, before, s, PropagationOptions(), None)
    >>> after.full_mask().sum(axis=(1, 2)).tolist()
    [4, 4, 4]
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


def apply_corrections(
    model: Any,
    frames: Any,
    result: StructureResult,
    prompts: PromptSet,
    done: int,
    options: PropagationOptions,
    min_confidence: float | None,
    *,
    cancel: Any = None,
    on_slice: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> StructureResult:
    """``result`` (that of the first ``done`` prompts) corrected by each later prompt.

    ``progress(k, len(prompts) - done)`` hears each correction once it is applied.
    """
    for i in range(done, len(prompts)):
        result = apply_correction(
            model,
            frames,
            result,
            head(prompts, i + 1),
            options,
            min_confidence,
            cancel=cancel,
            on_slice=on_slice,
        )
        if progress is not None:
            progress(i + 1 - done, len(prompts) - done)
    return result


__all__ = ["apply_correction", "apply_corrections", "corrects", "head", "round0_length", "rule_of"]
