"""A tiny 2D U-Net trained from scratch on a handful of labelled images (CPU friendly).

This is the built-in model of the ``cv5-2d`` protocol (``model="builtin-2d"``):
the protocol trains one per cross-validation fold on that fold's training cases
and segments the held-out fold with it, so no case is ever scored by a network
that saw it. RGB and grey images are both accepted; every image is resized to a
fixed training size (bilinear; labels nearest) and normalized with the per-channel
mean and standard deviation of the training images. Training uses random
horizontal and vertical flips, cross-entropy + soft Dice loss, AdamW with a cosine
learning-rate decay, and is deterministic given the seed (single CPU thread by
default). Prediction resizes the logits back to the image's own size.

torch is imported inside functions only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._atomic import atomic_path
from napari_segeval._errors import InvalidImageError, ReadError, SegEvalError, WriteError

FORMAT = "napari-segeval-unet2d"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class TrainConfig2D:
    """Training recipe of :func:`train_unet2d`.

    Parameters
    ----------
    iterations : int
        Optimizer steps (one mini-batch each).
    batch_size : int
        Images per step (drawn with replacement).
    lr : float
        Peak AdamW learning rate (cosine decay to 5 % of it).
    size : tuple of int
        ``(height, width)`` every image is resized to; multiples of ``2**(levels-1)``.
    width : int
        Channels of the first level (doubled at every level).
    levels : int
        Resolution levels of the U-Net.
    seed : int
        Seeds weight initialization, batch sampling and flips.
    threads : int
        torch CPU threads while training and predicting (restored afterwards).

    Examples
    --------
    >>> TrainConfig2D(iterations=10).to_dict()["iterations"]
    10
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
        d = asdict(self)
        d["size"] = list(self.size)
        return d


@lru_cache(maxsize=1)
def _network_class():
    from torch import nn

    def block(cin: int, cout: int):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.InstanceNorm2d(cout, affine=True),
            nn.LeakyReLU(0.01, inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.InstanceNorm2d(cout, affine=True),
            nn.LeakyReLU(0.01, inplace=True))

    class UNet2D(nn.Module):
        """Two 3x3 conv + InstanceNorm + LeakyReLU per level; max-pool down, transposed-conv up."""

        def __init__(self, in_channels: int, num_classes: int, width: int, levels: int) -> None:
            super().__init__()
            ch = [width * 2**i for i in range(levels)]
            self.down = nn.ModuleList([block(in_channels, ch[0])] +
                                      [block(ch[i - 1], ch[i]) for i in range(1, levels)])
            self.pool = nn.MaxPool2d(2)
            self.up = nn.ModuleList([nn.ConvTranspose2d(ch[i], ch[i - 1], 2, stride=2)
                                     for i in range(levels - 1, 0, -1)])
            self.merge = nn.ModuleList([block(2 * ch[i - 1], ch[i - 1])
                                        for i in range(levels - 1, 0, -1)])
            self.head = nn.Conv2d(ch[0], num_classes, 1)

        def forward(self, x):
            import torch

            skips = []
            for i, blk in enumerate(self.down):
                x = blk(x if i == 0 else self.pool(x))
                skips.append(x)
            for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1])):
                x = merge(torch.cat([up(x), skip], dim=1))
            return self.head(x)

    return UNet2D


def build_network(in_channels: int, num_classes: int, width: int = 12, levels: int = 4):
    """A fresh 2D U-Net returning logits ``(N, num_classes, H, W)``.

    Examples
    --------
    >>> import torch
    >>> build_network(3, 2, width=4, levels=2)(torch.zeros(1, 3, 8, 8)).shape
    torch.Size([1, 2, 8, 8])
    """
    return _network_class()(int(in_channels), int(num_classes), int(width), int(levels))


def as_channels(image: np.ndarray, in_channels: int | None = None) -> np.ndarray:
    """A 2D grey ``(H, W)`` or colour ``(H, W, C)`` image as float32 ``(C, H, W)``.

    Alpha is dropped; grey is repeated to 3 channels (or colour averaged to 1) when
    ``in_channels`` asks for it.

    Examples
    --------
    >>> as_channels(np.zeros((4, 5, 4), np.uint8)).shape, as_channels(np.zeros((4, 5)), 3).shape
    ((3, 4, 5), (3, 4, 5))
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


class _Threads:
    """Set torch's CPU thread count for a block and restore it."""

    def __init__(self, n: int) -> None:
        self.n = max(1, int(n))

    def __enter__(self):
        import torch

        self.old = torch.get_num_threads()
        torch.set_num_threads(self.n)

    def __exit__(self, *exc) -> None:
        import torch

        torch.set_num_threads(self.old)


def _resize(t, size, mode: str):
    import torch.nn.functional as F

    if tuple(t.shape[-2:]) == tuple(size):
        return t
    if mode == "nearest":
        return F.interpolate(t, size=tuple(size), mode="nearest")
    return F.interpolate(t, size=tuple(size), mode="bilinear", align_corners=False)


def _loss(logits, target, num_classes: int):
    import torch
    import torch.nn.functional as F

    ce = F.cross_entropy(logits, target)
    prob = logits.softmax(1)[:, 1:]
    onehot = F.one_hot(target, num_classes).permute(0, 3, 1, 2).to(prob.dtype)[:, 1:]
    inter = (prob * onehot).sum((0, 2, 3))
    denom = prob.sum((0, 2, 3)) + onehot.sum((0, 2, 3))
    dice = (2 * inter + 1.0) / (denom + 1.0)
    return ce + (1 - dice).mean() if num_classes > 1 else ce + torch.zeros(())


def train_unet2d(images: Sequence[np.ndarray], labels: Sequence[np.ndarray], num_classes: int,
                 config: TrainConfig2D | None = None, *, case_ids: Sequence[str] = (),
                 structures: dict[int, str] | None = None, device: str | None = "cpu") -> UNet2DModel:
    """Train a 2D U-Net on ``images`` / ``labels`` (label ids ``0 .. num_classes-1``).

    Parameters
    ----------
    images : sequence of numpy.ndarray
        ``(H, W)`` grey or ``(H, W, 3)`` colour images (sizes may differ).
    labels : sequence of numpy.ndarray
        Integer label maps of the same ``(H, W)`` as their image.
    num_classes : int
        Output classes, background included.
    config : TrainConfig2D, optional
        The recipe (default :class:`TrainConfig2D`).
    case_ids : sequence of str
        Names of the training cases, recorded in the model.
    structures : dict of int to str, optional
        Label id -> name, recorded in the model.
    device : str, optional
        ``"cpu"`` (default), ``"cuda"``, or None/``"auto"`` for the best available.

    Returns
    -------
    UNet2DModel

    Examples
    --------
    >>> img = np.zeros((16, 16), np.float32); img[4:12, 4:12] = 1
    >>> lab = (img > 0).astype(np.uint8)
    >>> m = train_unet2d([img], [lab], 2, TrainConfig2D(iterations=2, size=(16, 16), width=4, levels=2))
    >>> m.meta["train_cases"], m.segment_image(img).shape
    ([], (16, 16))
    """
    import torch

    from napari_segeval.models._device import pick_device

    cfg = config or TrainConfig2D()
    if not images or len(images) != len(labels):
        raise SegEvalError(f"2D U-Net training needs matching images and labels "
                           f"(got {len(images)} and {len(labels)})")
    num_classes = int(num_classes)
    arrays = [as_channels(im) for im in images]
    cin = 3 if any(a.shape[0] == 3 for a in arrays) else 1
    arrays = [as_channels(im, cin) for im in images]
    pixels = np.concatenate([a.reshape(cin, -1) for a in arrays], axis=1)
    mean = pixels.mean(1).astype(np.float64)
    std = np.maximum(pixels.std(1), 1e-6).astype(np.float64)
    t0 = time.perf_counter()
    dev = pick_device(device)
    with _Threads(cfg.threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        x = torch.cat([_resize(torch.from_numpy((a - mean[:, None, None].astype(np.float32))
                                                / std[:, None, None].astype(np.float32))[None],
                               cfg.size, "bilinear") for a in arrays])
        ys = []
        for a, lab in zip(arrays, labels):
            lab = np.asarray(lab)
            if lab.shape != a.shape[1:]:
                raise InvalidImageError(f"2D U-Net: labels {lab.shape} do not match image "
                                        f"{a.shape[1:]}")
            if lab.min() < 0 or lab.max() >= num_classes:
                raise SegEvalError(f"2D U-Net: label ids must lie in 0..{num_classes - 1}, "
                                   f"found {int(lab.min())}..{int(lab.max())}")
            ys.append(_resize(torch.from_numpy(lab.astype(np.float32))[None, None], cfg.size,
                              "nearest")[0, 0])
        y = torch.stack(ys).long()
        net = build_network(cin, num_classes, cfg.width, cfg.levels).to(dev)
        opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda i: 0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * i / cfg.iterations)))
        gen = torch.Generator().manual_seed(cfg.seed)
        net.train()
        losses = []
        for _ in range(cfg.iterations):
            idx = torch.randint(len(x), (cfg.batch_size,), generator=gen)
            xb, yb = x[idx], y[idx]
            flip = torch.rand(2, cfg.batch_size, generator=gen) < 0.5
            xb = torch.where(flip[0, :, None, None, None], xb.flip(-1), xb)
            yb = torch.where(flip[0, :, None, None], yb.flip(-1), yb)
            xb = torch.where(flip[1, :, None, None, None], xb.flip(-2), xb)
            yb = torch.where(flip[1, :, None, None], yb.flip(-2), yb)
            loss = _loss(net(xb.to(dev)), yb.to(dev), num_classes)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
    net.eval()
    meta = {"in_channels": cin, "num_classes": num_classes, "config": cfg.to_dict(),
            "mean": mean.tolist(), "std": std.tolist(), "train_cases": [str(c) for c in case_ids],
            "structures": {str(k): str(v) for k, v in sorted((structures or {}).items())},
            "final_loss": float(np.mean(losses[-10:])), "train_seconds": time.perf_counter() - t0,
            "device": str(dev)}
    state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    return UNet2DModel(state, meta, device=device)


@dataclass
class UNet2DModel:
    """A trained 2D U-Net: weights, normalization and what it was trained on.

    ``segment(case)`` makes it a dense model for the evaluation protocols.

    Parameters
    ----------
    state_dict : dict
        Network weights (CPU tensors).
    meta : dict
        ``in_channels``, ``num_classes``, ``config`` (:class:`TrainConfig2D` as a dict),
        ``mean``/``std`` per channel, ``train_cases``, ``structures`` and training stats.
    device : str, optional
        Where prediction runs (``"cpu"`` default; None/``"auto"`` picks the best).
    """

    state_dict: dict
    meta: dict
    device: str | None = "cpu"
    _net: Any = field(default=None, repr=False, compare=False)

    @property
    def config(self) -> TrainConfig2D:
        """The training recipe."""
        return TrainConfig2D(**{**self.meta["config"], "size": tuple(self.meta["config"]["size"])})

    @property
    def structures(self) -> dict[int, str]:
        """Label id -> name recorded at training time."""
        return {int(k): v for k, v in self.meta.get("structures", {}).items()}

    def network(self):
        """The network in eval mode on :attr:`device` (built once)."""
        if self._net is None:
            from napari_segeval.models._device import pick_device

            cfg = self.config
            net = build_network(self.meta["in_channels"], self.meta["num_classes"], cfg.width,
                                cfg.levels)
            net.load_state_dict(self.state_dict)
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
        with _Threads(self.config.threads), torch.no_grad():
            x = _resize(torch.from_numpy((a - mean) / std)[None], self.config.size, "bilinear")
            logits = _resize(net(x.to(dev)), a.shape[1:], "bilinear")
            return logits.softmax(1)[0].cpu().numpy().astype(np.float32)

    def segment_image(self, image: np.ndarray) -> np.ndarray:
        """Label map ``(H, W)`` (uint8) of one image."""
        return self.probabilities(image).argmax(0).astype(np.uint8)

    def segment(self, case, *, probabilities: bool = False):
        """Segment a 2D :class:`~napari_segeval.io.case.Case`; returns a ``DenseResult``."""
        from napari_segeval.models.dense._model import DenseResult

        if len(case.spatial_shape) != 2:
            raise InvalidImageError(f"2D U-Net: case {getattr(case, 'name', '')!r} is not 2D "
                                    f"(spatial shape {case.spatial_shape})")
        prob = self.probabilities(case.image)
        return DenseResult(labels=prob.argmax(0).astype(np.uint8),
                           probabilities=prob if probabilities else None,
                           params={"model": "builtin-2d", **self.meta["config"]})

    def save(self, path: str | os.PathLike) -> Path:
        """Write weights and meta atomically (temporary file + rename)."""
        import torch

        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WriteError(f"{path}: cannot write 2D U-Net ({exc})") from exc
        with atomic_path(path, overwrite=True) as tmp:
            torch.save({"format": FORMAT, "version": FORMAT_VERSION, "meta": self.meta,
                        "state_dict": self.state_dict}, tmp)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, device: str | None = "cpu") -> UNet2DModel:
        """Read a file written by :meth:`save` (``torch.load(weights_only=True)``)."""
        import torch

        try:
            data = torch.load(Path(path), map_location="cpu", weights_only=True)
        except Exception as exc:  # any unreadable file is a ReadError
            raise ReadError(f"{path}: cannot read 2D U-Net weights ({exc})") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ReadError(f"{path}: not a napari-segeval 2D U-Net file")
        return cls(data["state_dict"], data["meta"], device=device)


__all__ = ["TrainConfig2D", "UNet2DModel", "as_channels", "build_network", "train_unet2d"]
