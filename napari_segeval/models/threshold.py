"""A classical, weight-free promptable baseline: thresholded region growing.

Each step keeps the pixels brighter than ``level`` (a soft sigmoid step, so
the model is differentiable) inside the previous mask dilated by ``reach``
pixels; the key frame uses the box as the previous mask. It needs no weights,
which makes it the reference backend of the propagation tests and a sanity
baseline for bright, well separated objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval.inference.windowing import to_unit, window_bounds
from napari_segeval.models.base import NormalizeInfo, Order, ProgressFn, visit_indices
from napari_segeval.prompts.box import Box

if TYPE_CHECKING:  # pragma: no cover
    import threading

    import torch


class ThresholdPromptModel:
    """Soft threshold inside the dilated previous mask.

    Parameters
    ----------
    level : float
        Threshold in normalized units (``[0, 1]``).
    gain : float
        Steepness of the soft step.
    reach : int
        Dilation of the previous mask in pixels per step.

    Examples
    --------
    >>> frames = np.zeros((4, 8, 8), np.float32); frames[:, 2:6, 2:6] = 1
    >>> m = ThresholdPromptModel()
    >>> p = m.propagate(frames, 1, Box(2, 2, 6, 6, index=1), "forward")
    >>> p.shape, int((p > 0.5).sum())
    (torch.Size([3, 8, 8]), 48)
    """

    name = "threshold"

    def __init__(self, level: float = 0.5, gain: float = 20.0, reach: int = 1,
                 device: Any = "cpu") -> None:
        import torch

        self.level, self.gain, self.reach = float(level), float(gain), int(reach)
        self.device = torch.device(device)

    def preprocess(self, image: np.ndarray, modality: str,
                   window: str | tuple[float, float] | None = None,
                   ct_mapping: str = "window") -> torch.Tensor:
        """Raw frames to ``[0, 1]`` (see :func:`napari_segeval.inference.windowing.to_unit`).

        Examples
        --------
        >>> ThresholdPromptModel().preprocess(np.array([[[0, 255]]], np.uint8), "US").tolist()
        [[[0.0, 1.0]]]
        """
        import torch

        return torch.from_numpy(to_unit(np.asarray(image), modality, window, ct_mapping)[0])

    def normalize_info(self, modality: str, window: str | tuple[float, float] | None = None,
                       image: np.ndarray | None = None,
                       ct_mapping: str = "window") -> NormalizeInfo:
        """One normalized unit spans the window (CT), percentile range (MR) or 255 grey.

        Examples
        --------
        >>> ThresholdPromptModel().normalize_info("US").raw_per_normalized_unit
        255.0
        """
        lo, hi = window_bounds(modality, window, image, ct_mapping)
        return NormalizeInfo(hi - lo, 0.0, 1.0, f"{modality}: raw [{lo:g}, {hi:g}] -> [0, 1]")

    def propagate(self, frames: Any, key_index: int, box: Box, order: Order = "forward", *,
                  init_mask: Any = None, progress: ProgressFn | None = None,
                  cancel: threading.Event | None = None, stop_when_empty: bool = False,
                  grad: bool = False, prior_volume: Any = None,
                  on_frame: Any = None) -> torch.Tensor:
        """See :meth:`napari_segeval.models.base.PromptableModel.propagate`.

        ``on_frame(0, frame, prob)`` (optional) hears each frame as it is computed.
        """
        import torch
        import torch.nn.functional as F

        x = torch.as_tensor(frames).to(self.device, torch.float32)
        if x.ndim == 4:
            x = x.mean(dim=-1)
        n, h, w = x.shape
        idx = visit_indices(n, int(key_index), order)
        prior = torch.as_tensor(box.to_mask((h, w)) if init_mask is None else init_mask,
                                dtype=torch.float32, device=self.device)
        out = []
        k = 2 * self.reach + 1
        with torch.enable_grad() if grad else torch.no_grad():
            given = None if prior_volume is None else torch.as_tensor(
                prior_volume, dtype=torch.float32, device=self.device).detach()
            for j, f in enumerate(idx):
                check_cancel(cancel, "propagation")
                if given is not None and j > 0:
                    prior = given[idx[j - 1]]
                reach = F.max_pool2d(prior[None, None], k, 1, self.reach)[0, 0]
                prob = torch.sigmoid(self.gain * (x[f] - self.level)) * reach
                out.append(prob)
                if on_frame is not None:
                    on_frame(0, int(f), prob.detach())
                if progress is not None:
                    progress(j + 1, len(idx))
                if stop_when_empty and not bool((prob.detach() > 0.5).any()):
                    out.extend(torch.zeros((h, w), device=self.device)
                               for _ in range(len(idx) - j - 1))
                    if progress is not None and j + 1 < len(idx):
                        progress(len(idx), len(idx))
                    break
                prior = prob
        return torch.stack(out)
