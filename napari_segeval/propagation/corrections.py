"""Corrections: prompts that refine a structure's result instead of starting it again.

For a backend with a ``correct`` method (the built-in model,
:meth:`~napari_segeval.models.builtin_prompt.BuiltinPromptModel.correct`) and a
volume, a structure's result is built prompt by prompt in the order the prompts
were given:

* its **round 0**, every prompt up to its last box or mask prompt, propagates as
  always (both walks from the conditioning slices, confidence stop, largest
  component: :func:`~.core.propagate_structures`); a box or mask prompt added later
  therefore starts the structure again from all its prompts;
* every point after it is a **correction** applied to the result of the prompts
  before it: the backend returns the slices it changes (the clicked slice and the
  neighbours that share its error), every other slice keeps its probabilities and
  mask, and the largest component is taken again - with every component that holds a
  positive correction point (a click on slices the result missed stays, even where it
  does not touch the rest).

A set of points only, a video, gradients or per-slice priors, and every
backend without ``correct`` (MedSAM2, the threshold model) propagate the whole set
at once, as SAM2's predictor does from its memory of every prompt. The result of a
prompt set is a function of the set alone: a
:class:`~napari_segeval.propagation.session.PropagationSession` applies only the
new corrections to the result it keeps and gets exactly what
:func:`~.core.propagate_case` gets from the whole set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from napari_segeval.prompts.box import Box  # noqa: F401 (examples)
from napari_segeval.prompts.prompt_set import Point, PromptSet
from napari_segeval.propagation.masks import largest_component
from napari_segeval.propagation.options import PropagationOptions
from napari_segeval.propagation.result import StructureResult


def round0_length(prompts: PromptSet) -> int:
    """Number of leading prompts that are the set's round 0 (module doc).

    Everything up to the last box or mask prompt; the whole set when it has none.

    Examples
    --------
    >>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 1, index=3),
    ...                   Box(0, 0, 3, 3, index=7), Point(2, 2, index=4)])
    >>> round0_length(s), round0_length(PromptSet.of([Point(1, 1, index=3)]))
    (3, 1)
    """
    items = prompts.prompts
    last = max((i for i, p in enumerate(items) if not isinstance(p, Point)), default=None)
    return len(items) if last is None else last + 1


def corrects(model: Any, options: PropagationOptions, priors: Any = None) -> bool:
    """Whether prompts after round 0 are corrections for ``model`` with ``options``.

    Not for weights that take no points (``model.takes_points`` false): they refuse
    the points in one line before anything is walked.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> corrects(ThresholdPromptModel(), PropagationOptions())
    False
    """
    # weights without click channels refuse points: the walks do it before they run
    return (callable(getattr(model, "correct", None)) and options.mode == "volume"
            and not options.grad and priors is None
            and bool(getattr(model, "takes_points", True)))


def head(prompts: PromptSet, k: int) -> PromptSet:
    """The set of the first ``k`` prompts."""
    return PromptSet(prompts.label, tuple(prompts.prompts[:k]))


def kept_voxels(prompts: PromptSet) -> list[tuple[int, int, int]]:
    """``(slice, y, x)`` of the positive points after round 0: their components are
    kept beside the largest (a person's click on slices the result missed is not
    dropped).

    Examples
    --------
    >>> s = PromptSet.of([Box(0, 0, 4, 4, index=2), Point(1, 2, index=6),
    ...                   Point(3, 3, index=7, positive=False)])
    >>> kept_voxels(s)
    [(6, 1, 2)]
    """
    return [(int(p.index), *p.pixel) for p in prompts.prompts[round0_length(prompts):]
            if isinstance(p, Point) and p.positive]


def _result(label: int, probs: np.ndarray, mask: np.ndarray,
            options: PropagationOptions, keep: list | tuple = ()) -> StructureResult:
    """A structure's result from full-size probabilities and mask (largest component,
    and the components of ``keep``'s voxels)."""
    shape = tuple(probs.shape)
    if options.keep_largest and mask.any():
        mask = largest_component(mask, options.connectivity, keep)
    found = np.nonzero(probs != 0)
    if found[0].size == 0:
        return StructureResult(label, (0, 0, 0), np.zeros((0, 0, 0), np.float32),
                               np.zeros((0, 0, 0), bool), shape)
    crop = tuple(slice(int(v.min()), int(v.max()) + 1) for v in found)
    offset = tuple(int(c.start) for c in crop)
    return StructureResult(label, offset, probs[crop].copy(), mask[crop].copy(), shape)


def apply_correction(model: Any, frames: Any, result: StructureResult, prompts: PromptSet,
                     options: PropagationOptions, min_confidence: float | None, *,
                     cancel: Any = None,
                     on_slice: Callable[[int, int, np.ndarray], None] | None = None
                     ) -> StructureResult:
    """``result`` corrected by the last prompt of ``prompts`` (module doc).

    ``prompts`` is the structure's set up to and including the correction. The
    slices the backend returns take its probabilities and their decision (above
    :attr:`~.options.PropagationOptions.threshold`, or 0.5 with logits); every
    other slice keeps its probabilities and mask; then the largest component.

    Examples
    --------
    >>> class Add:  # a stand-in backend: the prompted slice becomes its box
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
    changed = model.correct(frames, prompts, mask.copy(), min_confidence=min_confidence,
                            cancel=cancel)
    for f, p in sorted(changed.items()):
        probs[f] = p
        mask[f] = p > threshold
        if on_slice is not None:
            on_slice(prompts.label, int(f), mask[f].copy())
    return _result(prompts.label, probs, mask, options, kept_voxels(prompts))


def apply_corrections(model: Any, frames: Any, result: StructureResult, prompts: PromptSet,
                      done: int, options: PropagationOptions, min_confidence: float | None,
                      *, cancel: Any = None, on_slice: Any = None,
                      progress: Callable[[int, int], None] | None = None) -> StructureResult:
    """``result`` (that of the first ``done`` prompts) corrected by each later prompt.

    ``progress(k, len(prompts) - done)`` hears each correction once it is applied.
    """
    for i in range(done, len(prompts)):
        result = apply_correction(model, frames, result, head(prompts, i + 1), options,
                                  min_confidence, cancel=cancel, on_slice=on_slice)
        if progress is not None:
            progress(i + 1 - done, len(prompts) - done)
    return result


__all__ = ["apply_correction", "apply_corrections", "corrects", "head", "round0_length"]
