"""MedSAM2 and SAM2.1 (every network of :data:`._build.ARCHITECTURES`) as a PromptableModel.

Frames are preprocessed in MedSAM2's steps at native size, then resized for the network:
``"float"`` (Pillow's bicubic weights, differentiable) or ``"pillow"`` (exact); logits come
back at native size (bilinear, ``logit > 0`` the mask).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval._errors import SegEvalError
from napari_segeval.inference.windowing import parse_window, window_bounds
from napari_segeval.models._frame_cache import DEFAULT_CACHE_MB, KeepsFeatures
from napari_segeval.models.base import Capabilities, NormalizeInfo, PromptableModel
from napari_segeval.models.walk import WALK_DEFAULTS, Walk, WalkOptions

from . import _loop
from ._build import ARCHITECTURES, FILL_HOLE_AREA, load_network
from ._preprocess import (
    _CT,
    IMAGENET_MEAN,
    IMAGENET_STD,
    _stack_rgb,
    pillow_resize,
    resize_bicubic,
    to_uint8_range,
)

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: Resize modes of :class:`MedSAM2Model` (module doc).
RESIZE_MODES = ("float", "pillow")
_NO_PER_SLICE = (
    "MedSAM2 conditions each frame on a memory bank of several frames; "
    "a per-slice chain with a given previous mask is not defined for it "
    "(use the full chain)"
)


def _resize_mode(resize: str) -> str:
    """``resize`` if it is one of :data:`RESIZE_MODES`, else one line."""
    if resize not in RESIZE_MODES:
        raise SegEvalError(f"resize must be one of {', '.join(RESIZE_MODES)}, got {resize!r}")
    return resize


class MedSAM2Model(KeepsFeatures, PromptableModel):
    """MedSAM2 (SAM2.1 Hiera-tiny, 512 px, 7 memory frames) or SAM2.1 with our propagation loop.

    ``network``: a loaded ``SAM2Base``; ``device`` None: CUDA, else MPS, else CPU;
    ``fill_hole_area`` in low-res pixels; ``cache_mb``: image features kept (None:
    unbounded); ``batch_walks`` None: batch a step's walks except on a CPU (batched kernels
    are not bit-identical there); ``resize="pillow"`` refuses gradients.
    """

    name = "medsam2"
    image_size = _loop.IMAGE_SIZE
    capabilities = Capabilities(
        points=True,
        masks=True,
        resize_modes=RESIZE_MODES,
    )

    @classmethod
    def from_registry(cls, name: str, checkpoint: Any, device: Any, precision: Any) -> MedSAM2Model:
        """The registry's ``medsam2`` and ``sam2.1-SIZE`` (refusing another's published file)."""
        from napari_segeval._errors import ReadError
        from napari_segeval.models._cache import published_twin
        from napari_segeval.models.precision import model_precision

        model_precision(precision, cls.capabilities, device, name)
        twin = published_twin(checkpoint)
        if twin is not None and twin.architecture != name:
            raise ReadError(
                f"{checkpoint}: this is the published {twin.filename} ({twin.name}), which "
                f"{twin.architecture} reads, not {name}: use --model {twin.architecture}"
            )
        network = load_network(Path(checkpoint), arch=name)
        return cls(network, device=device, name=ARCHITECTURES[name].name)

    def __init__(
        self,
        network: Any,
        device: Any = None,
        encode_batch: int = 4,
        fill_hole_area: int = FILL_HOLE_AREA,
        cache_mb: float | None = DEFAULT_CACHE_MB,
        batch_walks: bool | None = None,
        resize: str = "float",
        name: str = "medsam2",
    ) -> None:
        from napari_segeval.models._device import pick_device

        self.resize = _resize_mode(resize)
        self.name = str(name)
        self.image_size = int(getattr(network, "image_size", _loop.IMAGE_SIZE))
        self.device = pick_device(device if device is None else str(device))
        self.network = network.to(self.device).eval()
        for param in self.network.parameters():  # gradients flow to inputs only
            param.requires_grad_(False)
        self.encode_batch = int(encode_batch)
        self.fill_hole_area = int(fill_hole_area)
        self.cache_mb = cache_mb
        self.batch_walks = batch_walks
        self.last_run: dict = {}

    # -- preprocessing -------------------------------------------------
    def with_options(self, *, resize: str | None = None) -> MedSAM2Model:
        """A copy sharing the network, with other options (``resize``)."""
        import copy

        other = copy.copy(self)
        if resize is not None:
            other.resize = _resize_mode(resize)
        return other

    def preprocess(
        self, image: np.ndarray, modality: str, window: Any = None, ct_mapping: str = "window"
    ) -> torch.Tensor:
        """Raw ``(n, H, W)`` (or RGB ``(n, H, W, 3)``) -> normalized ``(n, H, W, 3)`` float32."""
        import torch

        u8 = to_uint8_range(image, modality, window, ct_mapping)
        rgb = np.repeat(u8[..., None], 3, axis=-1) if u8.shape[-1:] != (3,) else u8
        mean = np.asarray(IMAGENET_MEAN, dtype=np.float32)
        std = np.asarray(IMAGENET_STD, dtype=np.float32)
        return torch.from_numpy(((rgb.astype(np.float32) / 255.0 - mean) / std).astype(np.float32))

    def normalize_info(
        self,
        modality: str,
        window: Any = None,
        image: np.ndarray | None = None,
        ct_mapping: str = "window",
    ) -> NormalizeInfo:
        """Raw units per normalized unit (smallest ImageNet std) and the range (MR/PET: image)."""
        lo = min((0.0 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD))
        hi = max((1.0 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD))
        raw_lo, raw_hi = window_bounds(modality, window, image, ct_mapping)
        per = (raw_hi - raw_lo) * min(IMAGENET_STD)
        if modality.lower() in _CT:
            level, width = parse_window(window)
            how = "" if ct_mapping == "window" else f", clipped volume {raw_lo:g}..{raw_hi:g}"
            source, step = f"CT window W={width:g} L={level:g}{how}", "ImageNet"
        else:
            source, step = f"raw {raw_lo:g}..{raw_hi:g}", "ImageNet normalization"
        return NormalizeInfo(per, lo, hi, f"{source} -> 0..255 -> {step} (std {min(IMAGENET_STD)})")

    # -- inference -------------------------------------------------------
    def model_input(self, frames: Any) -> torch.Tensor:
        """Normalized native frames -> ``(n, 3, S, S)`` network input (float32 even under autocast)."""
        import contextlib

        import torch

        x = _stack_rgb(frames, self.device)
        if self.resize == "pillow":
            if x.requires_grad:
                raise SegEvalError(
                    "resize='pillow' is not differentiable: use resize='float' for attacks"
                )
            return pillow_resize(x, self.image_size)
        cuda = x.device.type == "cuda"
        with torch.autocast("cuda", enabled=False) if cuda else contextlib.nullcontext():
            return resize_bicubic(x, (self.image_size, self.image_size))

    def propagate_walks(
        self, frames: Any, walks: list[Walk], options: WalkOptions = WALK_DEFAULTS
    ) -> list:
        """Probabilities of several walks, each frame encoded once (see :meth:`walk_logits`)."""
        import torch

        logits = self.walk_logits(frames, walks, options)
        if options.crops:
            return [x.map(torch.sigmoid, 0.0) for x in logits]
        return [torch.sigmoid(x) for x in logits]

    def walk_logits(
        self, frames: Any, walks: list[Walk], options: WalkOptions = WALK_DEFAULTS
    ) -> list:
        """Native-size logits ``(n_visited, H, W)`` of each walk (crops: full frames).

        Each walk is SAM2's ``propagate_in_video`` with every prompt of its set given first.
        """
        import torch

        from napari_segeval.models._device import autocast_context
        from napari_segeval.models.walk import WalkOutput

        if any(walk.prior_volume is not None for walk in walks):
            raise SegEvalError(_NO_PER_SLICE)
        if not walks:
            return []
        n, h, w = (int(s) for s in tuple(frames.shape)[:3])
        grad = options.grad
        ctx: Any = torch.enable_grad() if grad else torch.inference_mode()
        with ctx, autocast_context(self.device, enabled=not grad):
            states = self._run(frames, walks, (n, h, w), options)
        outs = [[r.float() for r in s.rows] for s in states]
        if not options.crops:
            return [torch.stack(r) for r in outs]
        return [
            WalkOutput(
                s.frames,
                [(0, 0, h, w)] * len(r),
                r,
                (h, w),
                float("-inf"),
                quality=s.quality,
                presence=s.presence,
            )
            for s, r in zip(states, outs)
        ]

    def _run(
        self,
        frames: Any,
        walks: list[Walk],
        shape: tuple[int, int, int],
        options: WalkOptions,
    ) -> list[Any]:
        """Each walk's :class:`._walks.MemoryWalk` after the run."""
        from . import _walks
        from ._condition import condition_structure, reading_order

        n, h, w = shape
        groups: dict[Any, int] = {}
        states = []
        for walk in walks:
            g = groups.setdefault(walk.prompts, len(groups))
            states.append(
                _walks.MemoryWalk.of(
                    walk.frames(n).tolist(), g, reading_order(walk.prompts), walk.order == "forward"
                )
            )
        sets = {g: s for s, g in groups.items()}
        key = (self.resize, self.encode_batch, str(self.device))
        store, budget = self.run_cache(frames, options, key)  # store: for the next call
        reused = 0 if store is None else len(store)
        cond_frames = {g: reading_order(s) for g, s in sets.items()}
        feats = _walks.FrameFeatures(
            self.network,
            frames,
            self.model_input,
            self.encode_batch,
            budget,
            _walks.reads(states, cond_frames),
            store=store,
        )
        try:
            conds = {}
            for g, prompts in sets.items():  # every structure's prompts, before any walk
                check_cancel(options.cancel, "MedSAM2 propagation")
                conds[g] = condition_structure(
                    self.network, feats, prompts, n, (h, w), self.fill_hole_area, self.device
                )
            batch = self._batch()
            _walks.run_walks(
                self.network, feats, states, conds, (h, w), self.fill_hole_area, batch, options
            )
            return states
        finally:
            self.last_run = {
                "encoded_frames": feats.encoded,
                "reused_frames": reused,
                "peak_cache_bytes": feats.peak_bytes,
                "cache_budget_bytes": budget,
            }
            if store is None:
                feats.clear()

    def _batch(self) -> bool:
        """Batch the walks of a step: :attr:`batch_walks`, or ``None``: on accelerators only."""
        return self.device.type != "cpu" if self.batch_walks is None else bool(self.batch_walks)


def load_sam2(
    arch: str,
    path: str | Path,
    device: Any = None,
    encode_batch: int = 4,
    image_size: int | None = None,
) -> MedSAM2Model:
    """Load a checkpoint (``{"model": state_dict}``) of a :data:`._build.ARCHITECTURES` network.

    ``image_size`` None: the network's own (512 MedSAM2, 1024 SAM2.1); smaller sizes serve
    CPU tests. MissingDependencyError without the ``medsam2`` extra; ReadError (one line
    naming the file) for a missing, unreadable, pickled-code, mismatched or other-size file.
    """
    network = load_network(path, arch=arch, image_size=image_size)
    return MedSAM2Model(
        network, device=device, encode_batch=encode_batch, name=ARCHITECTURES[arch].name
    )


def load_medsam2(path: str | Path, device: Any = None, encode_batch: int = 4) -> MedSAM2Model:
    """Load a MedSAM2 checkpoint strictly and safely: :func:`load_sam2` of ``"medsam2"``."""
    return load_sam2("medsam2", path, device=device, encode_batch=encode_batch)
