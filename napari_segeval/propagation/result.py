"""What a propagation returns: the label map, and each structure inside the bounding box of
what its walks computed (zero outside), expanded to full size on access."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from napari_segeval.prompts.prompt_set import PromptSet
from napari_segeval.propagation.trace import StructureTrace


def extent(where: np.ndarray) -> tuple[tuple[int, ...], tuple[slice, ...]]:
    """Offset and slices of the bounding box of ``where``'s True voxels (empty when none)."""
    found = np.nonzero(where)
    if found[0].size == 0:
        return (0,) * where.ndim, (slice(0, 0),) * where.ndim
    crop = tuple(slice(int(v.min()), int(v.max()) + 1) for v in found)
    return tuple(int(c.start) for c in crop), crop


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
        Foreground probabilities inside the crop (float32), before post-processing.
    mask : numpy.ndarray
        The structure's own mask inside the crop (decision and largest component, before
        merging).
    shape : tuple of int
        Shape of the full array.
    tensor : torch.Tensor, optional
        With ``grad=True``: the differentiable probabilities of the crop.
    trace : StructureTrace, optional
        Where its walks ended and why, and the model's per-slice signals.
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
        empty = self.probabilities.shape[0] == 0  # an empty crop

        def one(a: Any) -> Any:
            return None if a is None else a.reshape(0, 0) if empty else a[0]

        return replace(
            self,
            offset=(0, 0) if empty else self.offset[1:],
            probabilities=one(self.probabilities),
            mask=one(self.mask),
            shape=self.shape[1:],
            tensor=one(self.tensor),
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
        With ``grad=True`` only: the full-size differentiable probabilities.
    """

    labels: np.ndarray
    structures: dict[int, StructureResult]
    prompts: dict[int, PromptSet]
    params: dict
    tensors: dict[int, Any] = field(default_factory=dict)

    @property
    def probabilities(self) -> Mapping[int, np.ndarray]:
        """Foreground probability ``(n, H, W)`` float32 per structure, expanded on each access."""
        return _Full(self.structures, "probabilities")

    @property
    def masks(self) -> Mapping[int, np.ndarray]:
        """Each structure's own boolean mask ``(n, H, W)`` (before merging), expanded on each access."""
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
