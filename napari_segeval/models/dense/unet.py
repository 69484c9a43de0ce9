"""The dense networks: the built-in 3D U-Net and the 2D U-Net of ``cv5-2d`` (imports torch)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from napari_segeval.models._blocks import conv_block


@dataclass(frozen=True)
class UNetConfig:
    """Architecture of :class:`UNet3D`: ``num_classes`` counts the background; ``levels - 1``
    down-samplings by 2 on every axis, ``base_channels`` doubled at each."""

    in_channels: int = 1
    num_classes: int = 6
    base_channels: int = 8
    levels: int = 4

    def to_dict(self) -> dict:
        """Plain dict (for JSON)."""
        return asdict(self)


class UNet3D(nn.Module):
    """Small 3D U-Net (:func:`~napari_segeval.models._blocks.conv_block` levels, strided
    down-sampling, transposed up-sampling, skips by concatenation) -> logits.
    """

    def __init__(self, config: UNetConfig) -> None:
        super().__init__()
        self.config = config
        ch = [config.base_channels * 2**i for i in range(config.levels)]
        self.stem = conv_block(config.in_channels, ch[0], dims=3)
        self.down = nn.ModuleList(
            nn.Conv3d(ch[i], ch[i], 2, stride=2) for i in range(config.levels - 1)
        )
        self.enc = nn.ModuleList(
            conv_block(ch[i], ch[i + 1], dims=3) for i in range(config.levels - 1)
        )
        self.up = nn.ModuleList(
            nn.ConvTranspose3d(ch[i + 1], ch[i], 2, stride=2) for i in range(config.levels - 1)
        )
        self.dec = nn.ModuleList(
            conv_block(2 * ch[i], ch[i], dims=3) for i in range(config.levels - 1)
        )
        self.head = nn.Conv3d(ch[0], config.num_classes, 1)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The last decoder level ``(N, base_channels, Z, Y, X)``: what :attr:`head` maps to logits."""
        skips = [self.stem(x)]
        for down, enc in zip(self.down, self.enc):
            skips.append(enc(down(skips[-1])))
        h = skips.pop()
        for i in reversed(range(len(self.up))):
            h = self.dec[i](torch.cat([self.up[i](h), skips.pop()], dim=1))
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits for a batch ``(N, C, Z, Y, X)`` with sizes divisible by ``2 ** (levels - 1)``."""
        return self.head(self.features(x))


class UNet2D(nn.Module):
    """Small 2D U-Net (:func:`~.unet2d.build_network`): like :class:`UNet3D` but max-pool
    down-sampling; sizes must be multiples of ``2 ** (levels - 1)``."""

    def __init__(self, in_channels: int, num_classes: int, width: int, levels: int) -> None:
        super().__init__()
        ch = [width * 2**i for i in range(levels)]
        self.down = nn.ModuleList(
            conv_block(cin, c, dims=2) for cin, c in zip([in_channels, *ch], ch)
        )
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList(
            [nn.ConvTranspose2d(ch[i], ch[i - 1], 2, stride=2) for i in range(levels - 1, 0, -1)]
        )
        self.merge = nn.ModuleList(
            [conv_block(2 * ch[i - 1], ch[i - 1], dims=2) for i in range(levels - 1, 0, -1)]
        )
        self.head = nn.Conv2d(ch[0], num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes, H, W)`` for a batch ``(N, C, H, W)``."""
        skips = []
        for i, blk in enumerate(self.down):
            x = blk(x if i == 0 else self.pool(x))
            skips.append(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1])):
            x = merge(torch.cat([up(x), skip], dim=1))
        return self.head(x)
