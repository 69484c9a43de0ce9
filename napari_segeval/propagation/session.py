"""A case being segmented and corrected: frames, prompts and results kept between runs, only
changed structures re-propagated (``docs/design.md``, "Correction rounds")."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidLabelsError, InvalidPromptError
from napari_segeval.io.case import Case
from napari_segeval.models.base import Corrections, ProgressFn
from napari_segeval.prompts.prompt_set import Prompt, PromptSet
from napari_segeval.propagation.core import (
    check_prompts,
    merged,
    on_grid,
    propagate_structures,
    total_steps,
)
from napari_segeval.propagation.corrections import (
    correct_structures,
    corrects,
    round0_length,
    rule_of,
    shifted_progress,
)
from napari_segeval.propagation.images import check_image_prompts, image_frames, propagation_mode
from napari_segeval.propagation.options import PropagationOptions, as_prompt_sets
from napari_segeval.propagation.result import PropagationResult, StructureResult, extent
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
        self.prompts.update(as_prompt_sets(prompts))

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

        Raises :class:`~napari_segeval.InvalidPromptError` when the structure has no prompts.
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
        """Forget structure ``label``: its prompts now, its result at the next :meth:`propagate`."""
        self.prompts.pop(int(label), None)

    def seed(self, labels: np.ndarray, prompts: Any) -> None:
        """Start from a known label map: each structure of ``prompts`` takes its mask there.

        Each structure in ``prompts`` gets these prompts and, as its result, its voxels of
        ``labels`` (``(n, H, W)``, or ``(H, W)`` for a 2D image) at the decision threshold's
        probability, so a re-propagated structure wins the voxels it claims. A seeded structure
        is not propagated until its prompts change. A label map of another shape raises
        :class:`~napari_segeval.InvalidLabelsError`.
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
            lo, crop = extent(mask)
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

    def stale(self) -> list[int]:
        """Structures whose prompts changed (or that were removed) since they were last propagated."""
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

        ``progress(done, total)`` counts one step per correction applied to a kept result, then
        the other structures' walk steps. Removed structures leave the result. Returns what
        :func:`~.core.propagate_case` returns with the session's prompts (on the 2D grid for a 2D
        image). A prompt that does not fit, or a ``labels`` entry without prompts, raises
        :class:`~napari_segeval.InvalidPromptError` before anything runs; an error or a cancel
        leaves the session as it was.
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
        rule = rule_of(self.model) if corrects(self.model, self.options) else Corrections.NONE
        n = int(self.frames.shape[0])
        total = fixes + (total_steps(n, rest, self.options.mode, corrections=rule) if rest else 0)
        # nothing is stored until every structure is done: a cancel leaves the session as it was
        min_confidence = resolve_min_confidence(self.model, self.options.min_confidence)
        used = {lab: len(self._used[lab]) for lab in grown}
        done = correct_structures(
            self.model,
            self.frames,
            self.structures,
            grown,
            used,
            self.options,
            min_confidence,
            progress,
            0,
            total,
            cancel=cancel,
            on_slice=on_slice,
        )
        if rest:
            more = propagate_structures(
                self.model,
                self.frames,
                rest,
                self.options,
                cancel=cancel,
                progress=shifted_progress(progress, fixes, total),
                on_slice=on_slice,
                cache=self.cache,
            )
            done.update(more)
        self.structures.update(done)
        self._seeded.difference_update(rest)
        self._used.update(sets)
        self.last_propagated = list(sets)
        ordered = {lab: self.structures[lab] for lab in self.prompts}
        result = merged(self.model, self.frames, ordered, self.prompts, self.options)
        self.result = on_grid(result, self.kind, self.modality)
        return self.result


__all__ = ["PropagationSession"]
