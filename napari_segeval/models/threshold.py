"""A classical, weight-free promptable baseline: thresholded region growing.

Each step keeps the pixels brighter than ``level`` (a soft sigmoid, so differentiable)
inside the previous mask dilated by ``reach``. A box is its frame's previous mask, a mask
prompt the output, a positive point adds its 4-connected bright region, a negative point
removes its region of the mask. The reference backend of the propagation tests;
:class:`UnitWindowModel` is the ``[0, 1]`` input it shares with the built-in model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval.inference.windowing import to_unit, window_bounds
from napari_segeval.models.base import Capabilities, NormalizeInfo, PromptableModel
from napari_segeval.models.precision import Precision, model_precision
from napari_segeval.models.walk import WALK_DEFAULTS, Walk, WalkOptions, WalkOutput, step_walks
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, Point

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import torch


class UnitWindowModel(PromptableModel):
    """A backend whose input is raw intensities mapped to ``[0, 1]`` by :func:`to_unit`."""

    #: Average RGB(A) frames to grey before the mapping (and take one 2D frame).
    grey_input = False
    #: Appended to :meth:`normalize_info`'s description.
    info_note = ""

    def preprocess(
        self,
        image: np.ndarray,
        modality: str,
        window: str | tuple[float, float] | None = None,
        ct_mapping: str = "window",
    ) -> torch.Tensor:
        """Raw frames to float32 ``[0, 1]`` (:func:`napari_segeval.inference.windowing.to_unit`)."""
        import torch

        arr = np.asarray(image)
        if self.grey_input:
            if arr.ndim == 4 and arr.shape[-1] in (3, 4):
                arr = arr[..., :3].astype(np.float32).mean(axis=-1)
            if arr.ndim == 2:
                arr = arr[None]
            if arr.ndim != 3:
                raise ValueError(f"expected (n, H, W) or (n, H, W, 3) frames, got {image.shape}")
        unit, _, _ = to_unit(arr, modality, window, ct_mapping)
        return torch.from_numpy(np.ascontiguousarray(unit))

    def normalize_info(
        self,
        modality: str,
        window: str | tuple[float, float] | None = None,
        image: np.ndarray | None = None,
        ct_mapping: str = "window",
    ) -> NormalizeInfo:
        """One normalized unit spans the window (CT), percentile range (MR) or 255 grey."""
        lo, hi = window_bounds(modality, window, image, ct_mapping)
        description = f"{modality}: raw [{lo:g}, {hi:g}] -> [0, 1]{self.info_note}"
        return NormalizeInfo(hi - lo, 0.0, 1.0, description)

    def _frames(self, frames: Any) -> torch.Tensor:
        """``frames`` as float32 ``(n, H, W)`` on the model's device (channels averaged)."""
        import torch

        x = torch.as_tensor(frames).to(self.device, torch.float32)
        if x.ndim == 4:
            x = x.mean(dim=-1)
        if x.ndim != 3:
            raise ValueError(f"frames must be (n, H, W) or (n, H, W, C), got {tuple(x.shape)}")
        return x


class ThresholdPromptModel(UnitWindowModel):
    """Soft threshold at ``level`` (normalized units; ``gain``: its steepness) inside the
    previous mask dilated by ``reach`` pixels per step.
    """

    name = "threshold"
    capabilities = Capabilities(points=True, masks=True, prior_volume=True)

    @classmethod
    def from_registry(
        cls, name: str, checkpoint: Path | None, device: Any, precision: Precision
    ) -> ThresholdPromptModel:
        """The registry's ``threshold`` (no weights; the CPU unless asked otherwise)."""
        model_precision(precision, cls.capabilities, device, name)
        return cls(device="cpu" if device in (None, "auto") else device)

    def __init__(
        self, level: float = 0.5, gain: float = 20.0, reach: int = 1, device: Any = "cpu"
    ) -> None:
        import torch

        self.level, self.gain, self.reach = float(level), float(gain), int(reach)
        self.device = torch.device(device)

    def propagate_walks(
        self, frames: Any, walks: list[Walk], options: WalkOptions = WALK_DEFAULTS
    ) -> list:
        """The walks advanced together (module doc for what each prompt does)."""
        import torch

        from napari_segeval.models._prompt_walks import PriorWalk, start

        x = self._frames(frames)
        states = [start(x, wk) for wk in walks]

        def step(group: list[PriorWalk], j: int) -> list:
            s = group[0]
            f = s.frames[j]
            if s.given is not None and j > 0:
                s.prior = s.given[s.frames[j - 1]]
            s.prior = self._frame(x[f], s.prior, s.walk.prompts.active(f), start=j == 0)
            s.values.append(s.prior)
            return [(s.prior.detach(), not bool((s.prior.detach() > 0.5).any()))]

        with torch.enable_grad() if options.grad else torch.no_grad():
            step_walks(states, options, step)
            outs = []
            for s in states:
                zero = torch.zeros_like(x[0])
                seq = torch.stack(s.values + [zero] * (len(s.frames) - len(s.values)))
                outs.append(WalkOutput.from_full(s.frames, seq) if options.crops else seq)
        return outs

    def _soft(self, frame: torch.Tensor) -> torch.Tensor:
        import torch

        return torch.sigmoid(self.gain * (frame - self.level))

    def _step(self, frame: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
        """The frame's pixels above ``level`` inside ``prior`` dilated by ``reach``."""
        import torch.nn.functional as F

        k = 2 * self.reach + 1
        reach = F.max_pool2d(prior[None, None], k, 1, self.reach)[0, 0]
        return self._soft(frame) * reach

    def _frame(
        self, frame: torch.Tensor, prior: torch.Tensor, active: tuple, start: bool
    ) -> torch.Tensor:
        """One frame: an ordinary step, or its prompts applied in order (module doc)."""
        import torch

        first = active[0] if active else None
        if isinstance(first, MaskPrompt):
            prob = torch.as_tensor(first.mask, dtype=torch.float32, device=self.device)
        elif isinstance(first, Box):
            box = torch.as_tensor(first.to_mask(frame.shape), dtype=torch.float32)
            prob = self._step(frame, box.to(self.device))
        elif start and active:
            prob = torch.zeros(frame.shape, device=self.device)
        else:
            prob = self._step(frame, prior)
        for p in active[1:] if isinstance(first, (MaskPrompt, Box)) else active:
            prob = self._point(frame, prob, p)
        return prob

    def _point(self, frame: torch.Tensor, prob: torch.Tensor, point: Point) -> torch.Tensor:
        """Add ``point``'s region above ``level`` (positive) or cut its region of the mask."""
        import torch
        from scipy import ndimage

        y, x = point.pixel
        region = (self._soft(frame) if point.positive else prob).detach() > 0.5
        lab, _ = ndimage.label(region.cpu().numpy())
        if not lab[y, x]:
            return prob
        grown = torch.as_tensor(lab == lab[y, x], dtype=torch.float32, device=prob.device)
        if point.positive:
            return torch.maximum(prob, self._soft(frame) * grown)
        return prob * (1.0 - grown)
