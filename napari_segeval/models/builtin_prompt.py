"""The built-in promptable model: a small box-, click- and mask-conditioned U-Net.

Weights with four input channels (format 1) refuse points; the shipped six-channel
weights take clicks (docs/model_cards.md). Frames are mapped to ``[0, 1]`` grey
(:class:`~napari_segeval.models.threshold.UnitWindowModel`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_segeval._atomic import atomic_path
from napari_segeval._errors import InvalidPromptError
from napari_segeval.models._checkpoint import content_error, load_state_strict, read_checkpoint
from napari_segeval.models._device import autocast_context, pick_device
from napari_segeval.models.base import Capabilities, Corrections
from napari_segeval.models.precision import Precision, model_precision
from napari_segeval.models.threshold import UnitWindowModel
from napari_segeval.models.walk import WALK_DEFAULTS, Walk, WalkOptions
from napari_segeval.prompts.prompt_set import Point

if TYPE_CHECKING:  # pragma: no cover
    import threading

    import torch

DEFAULT_WEIGHTS = Path(__file__).parent / "weights" / "builtin-prompt.pt"
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
    """The frozen network and config of a weight file, read as data (ReadError names a bad file)."""
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
    fits = f"its config (width={net.width}, depth={net.depth})"
    load_state_strict(net, blob.get("state_dict"), path, what, fits)
    return net.eval().requires_grad_(False), config


class BuiltinPromptModel(UnitWindowModel):
    """Propagation with the built-in U-Net: ``weights`` default to the shipped file."""

    name = "builtin"
    grey_input = True
    info_note = " (clipped)"
    #: Batch the walks of one propagation step through the network: ``None`` = on
    #: CUDA/MPS only (see :meth:`propagate_walks`).
    batch_walks: bool | None = None

    def __init__(self, weights: str | Path | None = None, device: Any = "auto") -> None:
        import torch

        self.device = device if isinstance(device, torch.device) else pick_device(device)
        net, self.config = load_network(weights)
        self.net = net.to(self.device)
        self.size = int(self.config.get("size", 64))
        self.weights = Path(weights) if weights is not None else DEFAULT_WEIGHTS

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
        points = any(isinstance(p, Point) for w in walks for p in w.prompts.prompts)
        if not self.takes_points and points:
            raise InvalidPromptError(
                f"{self.weights}: these built-in model weights take boxes and mask prompts, "
                "not points (no click channels); use boxes, or weights trained with clicks"
            )

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
        slice keeps them. A point for weights without click channels: InvalidPromptError.
        """
        import torch

        from napari_segeval.models import _prompt_corrections

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
        """
        import torch

        from napari_segeval.models import _prompt_walks

        self.check_walks(walks)
        x = self._frames(frames)
        states = [_prompt_walks.start(x, w) for w in walks]
        batch = self.device.type != "cpu" if self.batch_walks is None else bool(self.batch_walks)
        ctx = torch.enable_grad() if options.grad else torch.no_grad()
        with ctx, autocast_context(self.device, enabled=not options.grad):
            outs = _prompt_walks.run(self.net, self.size, x, states, batch, options)
            return outs if options.crops else [o.full() for o in outs]
