"""What a propagation returns: the label map and each structure at the size of its extent.

A structure's probabilities are zero (its logits ``-inf``) outside the frames its
walks reached and, for the built-in model, outside the windows around the object, so
:class:`StructureResult` keeps them only inside their bounding box (``offset`` +
crop). A case with many structures then holds one label map and small crops instead
of several full-size float volumes per structure. :class:`PropagationResult` expands
a structure to full size only on request (``result.probabilities[label]``, each
access a new array), which is what attacks and uncertainty read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from napari_segeval.prompts.prompt_set import PromptSet
from napari_segeval.propagation.trace import StructureTrace


@dataclass
class StructureResult:
    """One structure's propagation, kept inside its bounding box.

    Attributes
    ----------
    label : int
        Structure id.
    offset : tuple of int
        Index of the crop's first voxel in the full array.
    probabilities : numpy.ndarray
        Foreground probabilities inside the crop (float32), before post-processing;
        0 outside it.
    mask : numpy.ndarray
        The structure's own mask inside the crop (decision rule and largest
        component applied, before merging); False outside it.
    shape : tuple of int
        Shape of the full array.
    tensor : torch.Tensor, optional
        With ``grad=True``: the differentiable probabilities of the crop.
    trace : StructureTrace, optional
        Where its walks ended and why, and the model's own per-slice signals
        (:mod:`~napari_segeval.propagation.trace`); None for a result made otherwise.

    Examples
    --------
    >>> s = StructureResult(2, (1, 0, 1), np.full((1, 2, 2), 0.9, np.float32),
    ...                     np.ones((1, 2, 2), bool), (3, 2, 4))
    >>> s.full_probabilities()[1].tolist()
    [[0.0, 0.8999999761581421, 0.8999999761581421, 0.0], [0.0, 0.8999999761581421, 0.8999999761581421, 0.0]]
    >>> int(s.full_mask().sum()), s.slices
    (4, (slice(1, 2, None), slice(0, 2, None), slice(1, 3, None)))
    """

    label: int
    offset: tuple
    probabilities: np.ndarray
    mask: np.ndarray
    shape: tuple
    tensor: Any = None
    trace: StructureTrace | None = None

    @property
    def slices(self) -> tuple[slice, ...]:
        """Where the crop lies in the full array."""
        return tuple(slice(o, o + s) for o, s in zip(self.offset, self.probabilities.shape))

    def full_probabilities(self) -> np.ndarray:
        """The probabilities at full size (a new float32 array)."""
        out = np.zeros(self.shape, np.float32)
        out[self.slices] = self.probabilities
        return out

    def full_mask(self) -> np.ndarray:
        """The structure's own mask at full size (a new boolean array)."""
        out = np.zeros(self.shape, bool)
        out[self.slices] = self.mask
        return out

    def full_tensor(self) -> Any:
        """The differentiable probabilities at full size (``grad=True`` only)."""
        import torch.nn.functional as F

        if self.tensor is None:
            raise ValueError("no differentiable tensor: propagate with grad=True")
        pad = []
        for o, s, n in zip(self.offset[::-1], self.probabilities.shape[::-1], self.shape[::-1]):
            pad += [o, n - o - s]
        return F.pad(self.tensor, tuple(pad))

    def first(self) -> StructureResult:
        """The result of a one-frame stack on its 2D grid (a 2D image)."""
        if self.shape[0] != 1:
            raise ValueError(f"expected one frame, got {self.shape[0]}")
        probs, mask = self.probabilities, self.mask
        tensor = self.tensor
        if probs.shape[0] == 0:  # empty crop
            tensor = None if tensor is None else tensor.reshape(0, 0)
            return replace(
                self,
                offset=(0, 0),
                probabilities=np.zeros((0, 0), np.float32),
                mask=np.zeros((0, 0), bool),
                shape=self.shape[1:],
                tensor=tensor,
            )
        return replace(
            self,
            offset=self.offset[1:],
            probabilities=probs[0],
            mask=mask[0],
            shape=self.shape[1:],
            tensor=None if tensor is None else tensor[0],
        )


class _Full(Mapping):
    """A read-only mapping that expands each structure to full size when it is read."""

    def __init__(self, structures: dict[int, StructureResult], what: str) -> None:
        self._structures, self._what = structures, what

    def __getitem__(self, label: int) -> np.ndarray:
        s = self._structures[label]
        return s.full_probabilities() if self._what == "probabilities" else s.full_mask()

    def __iter__(self) -> Iterator[int]:
        return iter(self._structures)

    def __len__(self) -> int:
        return len(self._structures)

    def __repr__(self) -> str:
        return f"<{self._what} of structures {list(self._structures)}, expanded on access>"


@dataclass
class PropagationResult:
    """Output of :func:`~napari_segeval.propagation.core.propagate_case`.

    Attributes
    ----------
    labels : numpy.ndarray
        ``(n, H, W)`` label map (uint8, or uint16 for label ids above 255).
    structures : dict of int to StructureResult
        Each structure's probabilities and own mask, at the size of its extent.
    prompts : dict of int to PromptSet
        The prompt sets used, by structure id.
    params : dict
        Model name and the propagation settings, for provenance.
    tensors : dict of int to torch.Tensor
        With ``grad=True`` only: the full-size differentiable probabilities (graph
        to the input frames); empty otherwise.

    Examples
    --------
    >>> s = StructureResult(1, (0, 0, 0), np.ones((1, 1, 1), np.float32),
    ...                     np.ones((1, 1, 1), bool), (2, 1, 2))
    >>> r = PropagationResult(np.zeros((2, 1, 2), np.uint8), {1: s}, {}, {})
    >>> sorted(r.probabilities), r.probabilities[1].shape, int(r.masks[1].sum())
    ([1], (2, 1, 2), 1)
    """

    labels: np.ndarray
    structures: dict[int, StructureResult]
    prompts: dict[int, PromptSet]
    params: dict
    tensors: dict[int, Any] = field(default_factory=dict)

    @property
    def probabilities(self) -> Mapping[int, np.ndarray]:
        """Foreground probability ``(n, H, W)`` float32 per structure, before
        post-processing; expanded to full size on each access."""
        return _Full(self.structures, "probabilities")

    @property
    def masks(self) -> Mapping[int, np.ndarray]:
        """Each structure's own boolean mask ``(n, H, W)`` (decision rule and largest
        component, before merging: overlaps are kept); expanded on each access."""
        return _Full(self.structures, "masks")

    def first(self) -> PropagationResult:
        """A one-frame result on its 2D grid (a 2D image)."""
        if self.labels.shape[0] != 1:
            raise ValueError(f"expected one frame, got {self.labels.shape[0]}")
        return replace(
            self,
            labels=self.labels[0],
            structures={k: s.first() for k, s in self.structures.items()},
            tensors={k: v[0] for k, v in self.tensors.items()},
        )
