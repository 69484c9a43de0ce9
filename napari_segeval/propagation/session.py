"""A case being segmented and corrected: frames, prompts and results kept between runs.

A person (the viewer's Prompt panel) or the interactive protocol segments a case,
sees it fail on a slice, adds a prompt there and re-propagates. A
:class:`PropagationSession` makes that round cheap:

* the case is preprocessed once, and the session keeps the frames tensor and the
  backend's cache for it (``model.feature_cache()`` when the backend keeps one:
  MedSAM2 keeps the image features, within its ``cache_mb``), so a correction does
  not run the image encoder again;
* only the structures whose prompts changed are propagated again; the others keep
  their results (at the size of their extent) and the label map is merged anew;
* with a backend that takes corrections (the built-in model,
  :mod:`~.corrections`), a structure that only got new prompts after its propagated
  ones is not propagated again: the kept result gets just the new corrections.

The result of a re-propagation is exactly that of :func:`~.core.propagate_case` with
the session's current prompts (its tests check it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidLabelsError, InvalidPromptError
from napari_segeval.io.case import Case
from napari_segeval.models.base import Corrections, ProgressFn
from napari_segeval.prompts.box import Box  # noqa: F401 (examples)
from napari_segeval.prompts.prompt_set import Prompt, PromptSet
from napari_segeval.propagation.core import (
    check_prompts,
    merge_results,
    propagate_structures,
    record,
    total_steps,
)
from napari_segeval.propagation.corrections import (
    apply_corrections,
    corrects,
    round0_length,
    rule_of,
)
from napari_segeval.propagation.images import (
    check_image_prompts,
    image_frames,
    propagation_mode,
)
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult, StructureResult
from napari_segeval.propagation.walks import resolve_min_confidence


class PropagationSession:
    """One case's frames, each structure's prompts and results, for correction rounds.

    Parameters
    ----------
    model : PromptableModel
        Backend (its per-frame cache, if any, is kept for ``frames``).
    frames : tensor ``(n, H, W[, C])``
        The case in the model's normalized units (``model.preprocess(...)``).
    options : PropagationOptions, optional
        Settings of every propagation of the session (no gradients).
    kind : {"volume", "video", "image"}, optional
        ``"image"``: a 2D image as a one-frame stack; results come back on its 2D grid.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> from napari_segeval.prompts.prompt_set import Point
    >>> f = np.zeros((6, 12, 12), np.float32); f[:, 2:6, 2:6] = 1; f[:, 7:11, 7:11] = 1
    >>> s = PropagationSession(ThresholdPromptModel(), f)
    >>> _ = s.add(Box(2, 2, 6, 6, index=2, label=1)), s.add(Box(7, 7, 11, 11, index=3, label=2))
    >>> res = s.propagate()
    >>> sorted(s.last_propagated), int((res.labels == 2).sum())
    ([1, 2], 96)
    >>> _ = s.add(Point(8, 8, index=0, label=2, positive=False))
    >>> res = s.propagate()
    >>> s.last_propagated, int((res.labels == 2).sum()) < 96
    ([2], True)
    """

    def __init__(
        self,
        model: Any,
        frames: Any,
        options: PropagationOptions | None = None,
        *,
        kind: str | None = None,
    ) -> None:
        options = options or PropagationOptions()
        if options.grad:
            raise ValueError("a propagation session does not keep gradients (grad=False)")
        if kind is not None:
            options = options.replace(mode=propagation_mode(kind))
        self.model, self.frames, self.options, self.kind = model, frames, options, kind
        self.modality: str | None = None
        #: the backend's per-case cache (``model.feature_cache()``; None: it keeps none)
        self.cache = model.feature_cache()
        self.prompts: dict[int, PromptSet] = {}
        self.structures: dict[int, StructureResult] = {}
        self._used: dict[int, PromptSet] = {}
        self._seeded: set[int] = set()
        self.last_propagated: list[int] = []
        self.result: PropagationResult | None = None

    @classmethod
    def from_image(
        cls,
        model: Any,
        image: Case | np.ndarray,
        *,
        kind: str | None = None,
        modality: str | None = None,
        window: Any = None,
        ct_mapping: str = "window",
        options: PropagationOptions | None = None,
    ) -> PropagationSession:
        """A session on a raw image (preprocessed once, as :func:`~.images.propagate_image`)."""
        kind, modality, frames = image_frames(
            model, image, kind=kind, modality=modality, window=window, ct_mapping=ct_mapping
        )
        session = cls(model, frames, options, kind=kind)
        session.modality = modality
        return session

    # -- prompts -----------------------------------------------------------------------
    def set_prompts(self, prompts: Any) -> None:
        """Replace the prompts of the structures in ``prompts`` (prompt sets or boxes)."""
        for label, s in as_prompt_sets(prompts).items():
            self.prompts[label] = s

    def add(self, prompt: Prompt) -> PromptSet:
        """Append ``prompt`` to its structure's set (``prompt.label``); returns the set."""
        label = int(prompt.label)
        current = self.prompts.get(label)
        self.prompts[label] = (
            PromptSet(label, (prompt,)) if current is None else current.add(prompt)
        )
        return self.prompts[label]

    def undo(self, label: int) -> PromptSet | None:
        """Remove the last prompt of structure ``label`` (the structure, if it was the last).

        Raises :class:`~napari_segeval.InvalidPromptError` (one line) when the structure
        has no prompts.
        """
        current = self.prompts.get(int(label))
        if current is None:
            raise InvalidPromptError(f"structure {int(label)} has no prompts to undo")
        if len(current) <= 1:
            self.remove(label)
            return None
        self.prompts[int(label)] = current.remove(-1)
        return self.prompts[int(label)]

    def remove(self, label: int) -> None:
        """Forget structure ``label``: its prompts now, its result at the next :meth:`propagate`
        (:meth:`stale` lists it until then)."""
        self.prompts.pop(int(label), None)

    def seed(self, labels: np.ndarray, prompts: Any) -> None:
        """Start from a known label map: each structure of ``prompts`` takes its mask there.

        A case segmented earlier (the results browser's saved prediction) is corrected
        without propagating everything again: each structure in ``prompts`` (prompt
        sets or boxes, :func:`~.options.as_prompt_sets`) gets these prompts and, as its
        result, its voxels of ``labels`` (``(n, H, W)``, or ``(H, W)`` for a 2D image),
        with probability :attr:`~.options.PropagationOptions.cut` (or 0.5 with logits):
        the decision threshold, so a re-propagated structure wins the voxels it claims
        where the two overlap. Until its prompts change a seeded structure is not
        propagated, and the merged label map gives back ``labels`` on the seeded
        structures. A label map of another shape than the frames raises
        :class:`~napari_segeval.InvalidLabelsError` (one line).

        Examples
        --------
        >>> from napari_segeval.models.threshold import ThresholdPromptModel
        >>> from napari_segeval.prompts.prompt_set import Point
        >>> f = np.zeros((4, 8, 8), np.float32); f[:, 1:4, 1:4] = 1; f[:, 5:8, 5:8] = 1
        >>> saved = np.zeros((4, 8, 8), np.uint8); saved[1:3, 1:3, 1:3] = 1; saved[:, 5:8, 5:8] = 2
        >>> s = PropagationSession(ThresholdPromptModel(), f)
        >>> s.seed(saved, [Box(1, 1, 4, 4, index=1, label=1), Box(5, 5, 8, 8, index=1, label=2)])
        >>> _ = s.add(Point(6, 6, index=0, label=2, positive=False))
        >>> res = s.propagate()
        >>> s.last_propagated, int((res.labels == 1).sum()), int((res.labels == 2)[0].sum())
        ([2], 8, 0)
        """
        sets = as_prompt_sets(prompts)
        shape = tuple(int(v) for v in self.frames.shape[:3])
        arr = np.asarray(labels)
        arr = arr[None] if arr.ndim == 2 and shape[0] == 1 else arr
        if tuple(arr.shape) != shape:
            raise InvalidLabelsError(
                f"the label map has shape {tuple(np.shape(labels))}, the frames are {shape}"
            )
        cut = 0.5 if self.options.logits else float(self.options.threshold)
        for label, s in sets.items():
            mask = arr == label
            found = np.nonzero(mask)
            if found[0].size:
                lo = tuple(int(v.min()) for v in found)
                crop = tuple(slice(a, int(v.max()) + 1) for a, v in zip(lo, found))
            else:
                lo, crop = (0, 0, 0), (slice(0, 0),) * 3
            own = mask[crop]
            self.structures[label] = StructureResult(
                label, lo, np.where(own, np.float32(cut), np.float32(0)), own, shape
            )
            self.prompts[label] = s
            self._used[label] = s
            self._seeded.add(label)

    def _corrected(self, label: int, prompts: PromptSet) -> bool:
        """Whether ``prompts`` only add corrections to the propagated result of ``label``."""
        used = self._used.get(label)
        return (
            used is not None
            and label in self.structures
            and label not in self._seeded
            and corrects(self.model, self.options)
            and len(used) < len(prompts)
            and prompts.prompts[: len(used)] == used.prompts
            and len(used) >= round0_length(prompts, rule_of(self.model))
        )

    def _correct(
        self, sets: dict[int, PromptSet], cancel: Any, on_slice: Any, progress: Any
    ) -> dict[int, StructureResult]:
        """The kept results of ``sets`` corrected by their new prompts (module doc);
        ``progress(done, total)`` hears each correction once it is applied."""
        min_confidence = resolve_min_confidence(self.model, self.options.min_confidence)
        out, before = {}, 0
        for lab, s in sets.items():
            report = (
                None if progress is None else (lambda k, _n, _before=before: progress(_before + k))
            )
            out[lab] = apply_corrections(
                self.model,
                self.frames,
                self.structures[lab],
                s,
                len(self._used[lab]),
                self.options,
                min_confidence,
                cancel=cancel,
                on_slice=on_slice,
                progress=report,
            )
            before += len(s) - len(self._used[lab])
        return out

    def stale(self) -> list[int]:
        """Structures whose prompts changed since they were last propagated.

        A structure removed (:meth:`remove`, :meth:`undo` of its last prompt) since then
        is listed too: its mask is still in :attr:`result` until :meth:`propagate` drops it.
        """
        changed = [lab for lab, s in self.prompts.items() if self._used.get(lab) != s]
        return changed + [lab for lab in self.structures if lab not in self.prompts]

    # -- propagation ----------------------------------------------------------------------
    def propagate(
        self,
        labels: Iterable[int] | None = None,
        *,
        progress: ProgressFn | None = None,
        cancel: Any = None,
        on_slice: Callable[[int, int, np.ndarray], None] | None = None,
    ) -> PropagationResult:
        """Propagate the structures whose prompts changed (or ``labels``) and merge all.

        The other structures keep their results; the label map is merged from every
        structure's result. ``progress(done, total)`` counts one step per correction
        applied to a kept result, then the steps of the other structures' walks
        (:func:`~.core.total_steps`). Structures removed since (:meth:`remove`, :meth:`undo`) are
        dropped from the result, and are not in :attr:`last_propagated`. Returns the same as :func:`~.core.propagate_case` with
        the session's prompts, on the 2D grid for a 2D image. Raises
        :class:`~napari_segeval.InvalidPromptError` (one line) before anything runs
        when a prompt does not fit the case or ``labels`` names a structure without
        prompts, and leaves the session as it was (so does a
        cancel: :class:`~napari_segeval._cancel.Cancelled`, nothing kept half-done).
        """
        if not self.prompts:
            raise ValueError("propagation needs at least one prompt")
        for gone in [lab for lab in self.structures if lab not in self.prompts]:
            del self.structures[gone]
            self._used.pop(gone, None)
            self._seeded.discard(gone)
        todo = (
            [lab for lab in self.stale() if lab in self.prompts]
            if labels is None
            else [int(lab) for lab in labels]
        )
        for lab in todo:
            if lab not in self.prompts:
                raise InvalidPromptError(f"structure {lab} has no prompts")
        sets = {lab: self.prompts[lab] for lab in todo}
        if self.kind == "image" and sets:
            check_image_prompts(sets)
        check_prompts(sets, self.frames, self.options.mode)
        grown = {lab: s for lab, s in sets.items() if self._corrected(lab, s)}
        rest = {lab: s for lab, s in sets.items() if lab not in grown}
        # progress: one step per correction applied, then the steps of the others' walks
        fixes = sum(len(s) - len(self._used[lab]) for lab, s in grown.items())
        total = fixes + (
            total_steps(
                int(self.frames.shape[0]),
                rest,
                self.options.mode,
                corrections=(
                    rule_of(self.model) if corrects(self.model, self.options) else Corrections.NONE
                ),
            )
            if rest
            else 0
        )
        step = None if progress is None else (lambda done: progress(done, total))
        # nothing is stored until every structure is done: a cancel leaves the session as it was
        done = self._correct(grown, cancel, on_slice, step) if grown else {}
        if rest:
            done.update(
                propagate_structures(
                    self.model,
                    self.frames,
                    rest,
                    self.options,
                    cancel=cancel,
                    progress=None
                    if progress is None
                    else (lambda d, _t: progress(fixes + d, total)),
                    on_slice=on_slice,
                    cache=self.cache,
                )
            )
        self.structures.update(done)
        self._seeded.difference_update(rest)
        self._used.update(sets)
        self.last_propagated = list(sets)
        ordered = {lab: self.structures[lab] for lab in self.prompts}
        shape = tuple(int(v) for v in self.frames.shape[:3])
        labels_map = merge_results(ordered, shape, self.options)
        params = record(
            self.model,
            self.prompts,
            self.options,
            resolve_min_confidence(self.model, self.options.min_confidence),
            False,
        )
        if self.kind is not None:
            params["kind"] = self.kind
        if self.modality is not None:
            params["modality"] = self.modality
        result = PropagationResult(labels_map, ordered, dict(self.prompts), params)
        self.result = result.first() if self.kind == "image" else result
        return self.result


__all__ = ["PropagationSession"]
