"""The built-in promptable model: a small box-, click- and mask-conditioned U-Net.

Weights with four input channels (format 1) refuse points; the shipped six-channel
weights (docs/model_cards.md) take clicks. Every modality is mapped to ``[0, 1]`` by
:func:`napari_segeval.inference.windowing.to_unit` and RGB averaged to grey, so one
normalized unit is the window width in HU for CT and 255 grey levels for 8-bit video.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._atomic import atomic_path
from napari_segeval.inference.windowing import to_unit, window_bounds
from napari_segeval.models.base import Capabilities, Corrections, NormalizeInfo, PromptableModel
from napari_segeval.models.precision import Precision, model_precision
from napari_segeval.models.walk import WALK_DEFAULTS, Walk, WalkOptions

if TYPE_CHECKING:  # pragma: no cover
    import threading

    import torch

WEIGHTS_DIR = Path(__file__).parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "builtin-prompt.pt"
FORMAT = "napari-segeval/builtin-prompt/1"
#: ``min_confidence="auto"``: a direction ends at the first slice whose mean foreground
#: probability is below it (tuned on phantoms: docs/model_cards.md).
STOP_CONFIDENCE = 0.8


def save_weights(net: Any, path: str | Path, config: dict) -> None:
    """Write ``net``'s state dict with its ``config`` in the shipped format."""
    import torch

    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    with atomic_path(path, overwrite=True) as tmp:
        torch.save({"format": FORMAT, "config": dict(config), "state_dict": state}, str(tmp))


def load_network(path: str | Path | None = None) -> tuple[Any, dict]:
    """Load the network from a weight file, as data (no code runs on load).

    Raises
    ------
    napari_segeval.ReadError
        Missing, corrupt, unsafe (pickled code) or foreign files, naming the file.

    Examples
    --------
    >>> net, config = load_network()
    >>> config["size"]
    64
    """
    from napari_segeval.models._checkpoint import content_error, load_state_strict, read_checkpoint
    from napari_segeval.models._prompt_net import PromptUNet

    path = Path(path) if path is not None else DEFAULT_WEIGHTS
    what = "built-in prompt model weight file"
    blob = read_checkpoint(path, what)
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise content_error(path, what, f"no format {FORMAT!r} entry")
    config = dict(blob.get("config") or {})
    try:
        net = PromptUNet(
            width=int(config["width"]),
            depth=int(config["depth"]),
            in_channels=int(config.get("in_channels", 4)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise content_error(path, what, f"invalid config ({exc})") from None
    load_state_strict(
        net,
        blob.get("state_dict"),
        path,
        what,
        f"its config (width={net.width}, depth={net.depth})",
    )
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net, config


class BuiltinPromptModel(PromptableModel):
    """Box-prompted propagation with the shipped small U-Net.

    Parameters
    ----------
    weights : path, optional
        Weight file (default: the shipped ``builtin-prompt.pt``).
    device : str or torch.device, optional
        ``"auto"`` (default) picks CUDA, then MPS, then CPU.
    """

    name = "builtin"
    #: Batch the walks of one propagation step through the network: ``None`` = on
    #: CUDA/MPS only (see :meth:`propagate_walks`).
    batch_walks: bool | None = None

    def __init__(self, weights: str | Path | None = None, device: Any = "auto") -> None:
        import torch

        from napari_segeval.models._device import pick_device

        self.device = device if isinstance(device, torch.device) else pick_device(device)
        net, self.config = load_network(weights)
        self.net = net.to(self.device)
        self.size = int(self.config.get("size", 64))
        self.weights = Path(weights) if weights is not None else DEFAULT_WEIGHTS

    # -- normalization -------------------------------------------------------------------
    def preprocess(
        self,
        image: np.ndarray,
        modality: str,
        window: str | tuple[float, float] | None = None,
        ct_mapping: str = "window",
    ) -> torch.Tensor:
        """Raw ``(n, H, W)`` or ``(n, H, W, 3)`` to float32 ``[0, 1]`` grey ``(n, H, W)``.

        Examples
        --------
        >>> m = BuiltinPromptModel(device="cpu")
        >>> m.preprocess(np.full((2, 4, 4, 3), 255, np.uint8), "US").shape
        torch.Size([2, 4, 4])
        """
        import torch

        arr = np.asarray(image)
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
        """One normalized unit = the window width (CT), percentile range (MR) or 255 grey.

        Examples
        --------
        >>> BuiltinPromptModel(device="cpu").normalize_info("CT", "abdomen").raw_per_normalized_unit
        400.0
        """
        lo, hi = window_bounds(modality, window, image, ct_mapping)
        return NormalizeInfo(
            hi - lo, 0.0, 1.0, f"{modality}: raw [{lo:g}, {hi:g}] -> [0, 1] (clipped)"
        )

    @classmethod
    def from_registry(
        cls, name: str, checkpoint: Path | None, device: Any, precision: Precision
    ) -> BuiltinPromptModel:
        """The registry's ``builtin``; ``checkpoint`` another weight file (None: the shipped one)."""
        model_precision(precision, None, device, name)
        return cls(checkpoint, device="auto" if device is None else device)

    @classmethod
    def declared_capabilities(cls) -> Capabilities | None:
        """None: what it takes is a property of the loaded weights (its click channels)."""
        return None

    @property
    def takes_points(self) -> bool:
        """Whether the weights have click channels (points are refused otherwise)."""
        return bool(self.net.takes_points)

    @property
    def capabilities(self) -> Capabilities:
        """Boxes and mask prompts; points (local corrections) when the weights have click channels."""
        reason = "" if self.takes_points else f"the weights {self.weights} have no click channels"
        return Capabilities(
            points=self.takes_points,
            masks=True,
            corrections=(Corrections.POINTS if self.takes_points else Corrections.NONE),
            prior_volume=True,
            reason=reason,
            stop_confidence=STOP_CONFIDENCE,
        ).of(type(self))

    def check_walks(self, walks: list[Walk]) -> None:
        """Refuse point prompts when the weights have no click channels (one line)."""
        from napari_segeval._errors import InvalidPromptError
        from napari_segeval.models._prompt_walks import needs_points

        if not self.takes_points and needs_points(walks):
            raise InvalidPromptError(
                f"{self.weights}: these built-in model weights take boxes and mask prompts, "
                "not points (no click channels); use boxes, or weights trained with clicks"
            )

    def _frames(self, frames: Any) -> torch.Tensor:
        """``frames`` as float32 ``(n, H, W)`` on the model's device (channels averaged)."""
        import torch

        x = torch.as_tensor(frames)
        if x.ndim == 4:
            x = x.mean(dim=-1)
        if x.ndim != 3:
            raise ValueError(f"frames must be (n, H, W) or (n, H, W, C), got {tuple(x.shape)}")
        return x.to(self.device, torch.float32)

    def correct(
        self,
        frames: torch.Tensor | np.ndarray,
        prompts: Any,
        previous: Any,
        *,
        min_confidence: float | None = None,
        cancel: threading.Event | None = None,
    ) -> dict[int, np.ndarray]:
        """A local correction: slice -> new probabilities ``(H, W)`` that ``prompts``' last prompt changes.

        ``previous``: the structure's boolean masks ``(n, H, W)`` before it; every other
        slice keeps them.

        Raises
        ------
        napari_segeval.InvalidPromptError
            A point prompt for weights without click channels.
        ValueError
            ``frames`` or ``previous`` of the wrong shape.
        """
        import torch

        from napari_segeval.models import _prompt_corrections
        from napari_segeval.models._device import autocast_context
        from napari_segeval.models.walk import Walk

        self.check_walks([Walk(prompts.prompts[-1].index, prompts)])
        x = self._frames(frames)
        previous = np.asarray(previous, bool)
        if previous.shape != tuple(x.shape):
            raise ValueError(
                f"previous masks must have the frames' shape {tuple(x.shape)}, got {previous.shape}"
            )
        prev = torch.as_tensor(previous, device=self.device)
        with torch.no_grad(), autocast_context(self.device, enabled=True):
            out = _prompt_corrections.correct(
                self.net, self.size, x, prompts, prev, min_confidence, cancel
            )
        return {int(f): p.float().cpu().numpy() for f, p in out.items()}

    def propagate_walks(
        self,
        frames: torch.Tensor | np.ndarray,
        walks: list[Walk],
        options: WalkOptions = WALK_DEFAULTS,
    ) -> list:
        """Several walks (structure x direction) advanced together, one frame each per step.

        :attr:`batch_walks` batches a step's walks (default: not on a CPU, where batched
        convolutions differ in the last bits); ``options.cache_mb`` does not apply.

        Raises
        ------
        napari_segeval.InvalidPromptError
            A point prompt for weights without click channels.
        """
        import torch

        from napari_segeval.models import _prompt_walks
        from napari_segeval.models._device import autocast_context

        self.check_walks(walks)
        x = self._frames(frames)
        states = [_prompt_walks.start(x, w) for w in walks]
        batch = self.device.type != "cpu" if self.batch_walks is None else bool(self.batch_walks)
        ctx = torch.enable_grad() if options.grad else torch.no_grad()
        with ctx, autocast_context(self.device, enabled=not options.grad):
            outs = _prompt_walks.run(self.net, self.size, x, states, batch, options)
            return outs if options.crops else [o.full() for o in outs]
