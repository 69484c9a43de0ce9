"""The ``cv5-2d`` protocol's 2D U-Net model, trained per fold: the runtime part.

Images are resized to a fixed size and normalized with the training images' per-channel
mean and std; logits are resized back.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from napari_segeval._atomic import atomic_path
from napari_segeval._errors import InvalidImageError, ReadError, SegEvalError, WriteError
from napari_segeval.models._checkpoint import content_error, load_state_strict
from napari_segeval.models._device import pick_device

FORMAT = "napari-segeval-unet2d"
FORMAT_VERSION = 1
#: What a model file is called in messages.
WHAT = "2D U-Net model file"


@dataclass(frozen=True)
class TrainConfig2D:
    """Architecture, input size and training recipe of a :class:`UNet2DModel` (in its file).

    :func:`napari_segeval.training.unet2d.train_unet2d` runs ``iterations`` AdamW steps of
    ``batch_size`` images drawn with replacement, peak ``lr`` with cosine decay to 5 % of
    it; every image is resized to ``size`` ``(H, W)`` (multiples of ``2**(levels-1)``);
    ``width``: first-level channels, doubled per level; ``seed`` seeds initialization,
    sampling and flips; ``threads``: torch CPU threads while training and predicting.
    """

    iterations: int = 300
    batch_size: int = 4
    lr: float = 3e-3
    size: tuple[int, int] = (128, 160)
    width: int = 12
    levels: int = 4
    seed: int = 0
    threads: int = 1

    def __post_init__(self) -> None:
        div = 2 ** (self.levels - 1)
        size = tuple(int(v) for v in self.size)
        if len(size) != 2 or any(v < div or v % div for v in size):
            raise SegEvalError(f"2D U-Net size {self.size!r}: need two positive multiples of {div}")
        if self.iterations < 1 or self.batch_size < 1 or self.width < 1 or self.levels < 2:
            raise SegEvalError(f"2D U-Net training config out of range: {self}")
        object.__setattr__(self, "size", size)

    def to_dict(self) -> dict:
        """Plain dict (JSON)."""
        return {**asdict(self), "size": list(self.size)}


def build_network(in_channels: int, num_classes: int, width: int = 12, levels: int = 4):
    """A fresh 2D U-Net returning logits ``(N, num_classes, H, W)``."""
    from napari_segeval.models.dense.unet import UNet2D

    return UNet2D(int(in_channels), int(num_classes), int(width), int(levels))


def as_channels(image: np.ndarray, in_channels: int | None = None) -> np.ndarray:
    """A grey ``(H, W)`` or colour ``(H, W, 3|4)`` image as float32 ``(C, H, W)``, alpha dropped,
    grey repeated (or colour averaged) to ``in_channels``.
    """
    a = np.asarray(image, dtype=np.float32)
    if a.ndim == 2:
        a = a[None]
    elif a.ndim == 3 and a.shape[-1] in (3, 4):
        a = np.moveaxis(a[..., :3], -1, 0)
    else:
        raise InvalidImageError(f"2D U-Net: expected a (H, W) or (H, W, 3|4) image, got {a.shape}")
    if in_channels is not None and in_channels != a.shape[0]:
        a = np.repeat(a, in_channels, 0) if a.shape[0] == 1 else a.mean(0, keepdims=True)
    return np.ascontiguousarray(a)


@contextlib.contextmanager
def TorchThreads(n: int) -> Iterator[None]:
    """Set torch's CPU thread count for a block and restore it."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def resize2d(t, size, mode: str):
    """Resize ``(N, C, H, W)`` to ``size``: ``"nearest"`` or bilinear (no corner alignment)."""
    import torch.nn.functional as F

    if tuple(t.shape[-2:]) == tuple(size):
        return t
    corners = None if mode == "nearest" else False
    return F.interpolate(t, size=tuple(size), mode=mode, align_corners=corners)


@dataclass
class UNet2DModel:
    """A trained 2D U-Net, a dense model of the protocols (``segment(case)``).

    ``meta``: ``in_channels``, ``num_classes``, ``config`` (:class:`TrainConfig2D` as a
    dict), per-channel ``mean``/``std``, ``train_cases``, ``structures``, training stats.
    ``device``: None/``"auto"`` picks the best.
    """

    state_dict: dict
    meta: dict
    device: str | None = "cpu"
    _net: Any = field(default=None, repr=False, compare=False)
    #: Where the weights came from, recorded in results and named in error messages.
    name: str = field(default="2D U-Net", repr=False, compare=False)

    @property
    def config(self) -> TrainConfig2D:
        """The training recipe."""
        return TrainConfig2D(**self.meta["config"])  # its __post_init__ makes size a tuple

    #: Raw units per normalized unit: the protocols' attacks do not run on it (1.0).
    raw_per_normalized_unit: ClassVar[float] = 1.0

    @property
    def num_classes(self) -> int:
        """Output classes, background included (recorded at training time)."""
        return int(self.meta["num_classes"])

    @property
    def structures(self) -> dict[int, str]:
        """Label id -> name recorded at training time."""
        return {int(k): v for k, v in self.meta.get("structures", {}).items()}

    def network(self):
        """The network in eval mode on :attr:`device` (built once)."""
        if self._net is None:
            cfg = self.config
            net = build_network(
                self.meta["in_channels"], self.meta["num_classes"], cfg.width, cfg.levels
            )
            load_state_strict(net, self.state_dict, self.name, WHAT, "the 2D U-Net")
            self._net = net.to(pick_device(self.device)).eval()
        return self._net

    def probabilities(self, image: np.ndarray) -> np.ndarray:
        """Softmax probabilities ``(K, H, W)`` (float32) on the image's own grid."""
        import torch

        a = as_channels(image, self.meta["in_channels"])
        mean = np.asarray(self.meta["mean"], np.float32)[:, None, None]
        std = np.asarray(self.meta["std"], np.float32)[:, None, None]
        net = self.network()
        dev = next(net.parameters()).device
        with TorchThreads(self.config.threads), torch.no_grad():
            x = resize2d(torch.from_numpy((a - mean) / std)[None], self.config.size, "bilinear")
            logits = resize2d(net(x.to(dev)), a.shape[1:], "bilinear")
            return logits.softmax(1)[0].cpu().numpy().astype(np.float32)

    def segment(self, case, *, probabilities: bool = False):
        """Segment a 2D :class:`~napari_segeval.io.case.Case`; returns a ``DenseResult``."""
        from napari_segeval.models.dense._model import DenseResult

        if len(case.spatial_shape) != 2:
            raise InvalidImageError(
                f"2D U-Net: case {case.image_path or ''} is not 2D "
                f"(spatial shape {case.spatial_shape})"
            )
        prob = self.probabilities(case.image)
        return DenseResult(
            labels=prob.argmax(0).astype(np.uint8),
            probabilities=prob if probabilities else None,
            params={"model": "builtin-2d", **self.meta["config"]},
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Write weights and meta atomically (temporary file + rename)."""
        import torch

        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WriteError(f"{path}: cannot write 2D U-Net ({exc})") from exc
        with atomic_path(path, overwrite=True) as tmp:
            torch.save(
                {
                    "format": FORMAT,
                    "version": FORMAT_VERSION,
                    "meta": self.meta,
                    "state_dict": self.state_dict,
                },
                tmp,
            )
        return path

    @classmethod
    def from_checkpoint(
        cls, data: Any, path: str | os.PathLike, device: str | None = "cpu"
    ) -> UNet2DModel:
        """The model of a file of :meth:`save` read as data from ``path`` (ReadError: a bad one)."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise content_error(path, WHAT, f"no format {FORMAT!r} entry")
        model = cls(
            data.get("state_dict") or {}, data.get("meta") or {}, device=device, name=str(path)
        )
        try:
            model.network()
        except (KeyError, TypeError, ValueError, AttributeError, SegEvalError) as exc:
            if isinstance(exc, ReadError):
                raise
            raise content_error(path, WHAT, f"invalid meta entry ({exc})") from None
        return model


__all__ = [
    "TorchThreads",
    "TrainConfig2D",
    "UNet2DModel",
    "as_channels",
    "build_network",
    "resize2d",
]
