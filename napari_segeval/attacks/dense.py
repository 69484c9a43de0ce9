"""Attack target for dense models: the whole normalized input through the sliding window."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval.inference.resample import resample_back, resample_labels
from napari_segeval.inference.sliding_window import gaussian_weights, window_grid
from napari_segeval.io.case import Case

if TYPE_CHECKING:  # pragma: no cover
    import torch

GRADIENTS = ("whole", "chunked")


def _chunked_vjp(
    model: Any,
    x: torch.Tensor,
    g: torch.Tensor,
    overlap: float,
    batch_size: int,
    mirror_axes: tuple[int, ...],
) -> torch.Tensor:
    """Gradient of ``<g, sliding_window_logits(x)>`` w.r.t. ``x``, one window batch at a time."""
    import torch
    import torch.nn.functional as F

    patch = tuple(int(p) for p in model.patch_size)
    src = tuple(x.shape[2:])
    pads = [((max(p - n, 0)) // 2, max(p - n, 0) - max(p - n, 0) // 2) for n, p in zip(src, patch)]
    flat = [v for a, b in reversed(pads) for v in (a, b)]
    xp = F.pad(x, flat) if any(flat) else x
    gp = F.pad(g, flat) if any(flat) else g
    shape = tuple(xp.shape[2:])
    slices = window_grid(shape, patch, overlap)
    w = torch.from_numpy(gaussian_weights(patch)).to(x.device)
    norm = torch.zeros(shape, dtype=torch.float32, device=x.device)
    for s in slices:
        norm[s] += w
    flips = [c for r in range(len(mirror_axes) + 1) for c in itertools.combinations(mirror_axes, r)]
    jobs = [(b, s) for b in range(xp.shape[0]) for s in slices]
    gx = torch.zeros_like(xp)
    for i in range(0, len(jobs), batch_size):
        chunk = jobs[i : i + batch_size]
        batch = torch.cat([xp[(slice(b, b + 1), slice(None)) + s] for b, s in chunk])
        batch = batch.detach().requires_grad_(True)
        gout = torch.cat([gp[(slice(b, b + 1), slice(None)) + s] / norm[s] for b, s in chunk])
        with torch.enable_grad():
            pred = None
            for axes in flips:
                dims = [a + 2 for a in axes]
                p = model.network(batch.flip(dims) if dims else batch)
                p = p.flip(dims) if dims else p
                pred = p if pred is None else pred + p
            assert pred is not None  # flips holds () at least
            pred = pred.float() / len(flips) * w
            (gb,) = torch.autograd.grad(pred, batch, gout)
        for j, (b, s) in enumerate(chunk):
            gx[(b, slice(None)) + s] += gb[j]
    crop = tuple(slice(a, a + n) for (a, _), n in zip(pads, src))
    return gx[(slice(None), slice(None)) + crop]


def _chunked_function():
    import torch

    class ChunkedSlidingWindow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, target):
            ctx.target = target
            ctx.save_for_backward(x)
            with torch.no_grad():
                return target._logits(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            t = ctx.target
            return _chunked_vjp(t.model, x, g, t.overlap, t.batch_size, t.mirror_axes), None

    return ChunkedSlidingWindow


class DenseTarget:
    """A case and a dense model, seen as ``forward(x) -> logits`` for the attacks.

    Parameters
    ----------
    model : DenseModel
        From :func:`napari_segeval.models.registry.load_dense`.
    case : Case
        The volume (and optional reference labels).
    overlap, batch_size, mirror
        Sliding-window settings (as :func:`~napari_segeval.models.dense.segment_case`).
    gradient : {"whole", "chunked"}
        ``"chunked"``: ``"whole"``'s gradient exactly, with memory bounded by one window
        batch (each batch recomputed with a graph: one extra forward pass).
    postprocess : bool
        Apply the model's post-processing to the clean and attacked label maps.
    """

    kind = "dense"
    #: the input is ``(1, channels, *grid)``
    channel_axis: int | None = 1

    def __init__(
        self,
        model: Any,
        case: Case,
        *,
        overlap: float = 0.5,
        batch_size: int = 2,
        mirror: Any = False,
        gradient: str = "whole",
        postprocess: bool = True,
    ) -> None:
        if gradient not in GRADIENTS:
            raise ValueError(f"gradient must be one of {GRADIENTS}, got {gradient!r}")
        self.model, self.case = model, case
        self.overlap, self.batch_size, self.gradient = float(overlap), int(batch_size), gradient
        self.mirror_axes = tuple(model._mirror_axes(mirror))
        self.apply_postprocess = postprocess
        self.x, self.info = model.preprocess(case)
        lo, hi = self.info.valid_range
        self.valid_range = (float(lo), float(hi))
        #: the valid range of each input channel (its own clip bounds, z-scored)
        self.channel_valid_ranges = tuple(
            (float(lo), float(hi)) for lo, hi in self.info.channel_valid_range
        )
        #: raw units per normalized unit of this case, per channel (MR min-max included)
        self.channel_scales = tuple(float(v) for v in self.info.channel_scale)
        #: the first channel's (a Budget has one number; see channel_scales)
        self.raw_per_normalized_unit = self.channel_scales[0]
        self.num_classes = int(model.num_classes)
        #: the model's structures, named as the case names them
        self.structures = {k: case.structures.get(k, v) for k, v in model.structures.items()}
        self._fn = _chunked_function() if gradient == "chunked" else None

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.logits(
            x, overlap=self.overlap, mirror=list(self.mirror_axes), batch_size=self.batch_size
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(1, K, *grid)`` of a normalized input, differentiable."""
        if self._fn is not None:
            return self._fn.apply(x, self)
        return self._logits(x)

    def reference_target(self) -> torch.Tensor | None:
        """Reference labels on the model grid ``(1, *grid)`` (class indices), or None."""
        import torch

        if self.case.labels is None:
            return None
        lab = np.asarray(self.case.labels)
        if self.info.resample is not None:
            lab = resample_labels(lab, self.info.resample)
        lab = np.where(lab < self.num_classes, lab, 0).astype(np.int64)
        return torch.from_numpy(lab)[None].to(self.x.device)

    def labels(self, logits: torch.Tensor) -> np.ndarray:
        """Label map on the case's grid (softmax, resample back, argmax, post-process)."""
        labels, _, _ = self.model.postprocess(
            logits, self.info, self.case.spacing, apply=self.apply_postprocess
        )
        return labels

    def perturbation_raw(self, delta: torch.Tensor) -> np.ndarray:
        """``delta`` on the case's grid in raw units (linear resampling keeps the L-inf bound).

        ``(C, *spatial)`` for a multi-channel case (each channel in its own raw units).
        """
        d = delta.detach()[0].float().cpu().numpy()
        if self.info.resample is not None:
            d = resample_back(d, self.info.resample, order=1, channel_axis=0)
        scale = np.asarray(self.channel_scales, np.float32).reshape(-1, *([1] * (d.ndim - 1)))
        d = (d * scale).astype(np.float32)
        return d if self.case.is_multichannel else d[0]

    def describe(self) -> dict:
        """Target settings for the record."""
        return {
            "kind": self.kind,
            "model": self.model.describe(),
            "overlap": self.overlap,
            "batch_size": self.batch_size,
            "mirror_axes": list(self.mirror_axes),
            "gradient": self.gradient,
            "scope": "whole volume (every sliding window)",
            "perturbation_grid": "model grid" if self.info.resample is not None else "case grid",
            "postprocess": self.apply_postprocess,
            "preprocess": self.info.to_dict(),
        }
