"""The U-Net convolution block of the built-in networks (imports torch).

Its layout fixes the shipped weight files' state-dict keys: do not reorder it.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

_CONV = {2: nn.Conv2d, 3: nn.Conv3d}
#: norm -> the layers after each convolution, by dims and channels
_NORMS: dict[str, Callable[[int, int], list[nn.Module]]] = {
    "instance": lambda d, c: [
        (nn.InstanceNorm2d, nn.InstanceNorm3d)[d - 2](c, affine=True),
        nn.LeakyReLU(0.01, inplace=True),
    ],
    "batch": lambda d, c: [(nn.BatchNorm2d, nn.BatchNorm3d)[d - 2](c), nn.ReLU(inplace=True)],
}


def conv_block(cin: int, cout: int, *, dims: int, norm: str = "instance") -> nn.Sequential:
    """``(conv -> norm -> activation) x 2``: InstanceNorm + LeakyReLU(0.01) or BatchNorm + ReLU."""
    if dims not in _CONV:
        raise ValueError(f"dims must be 2 or 3, got {dims}")
    if norm not in _NORMS:
        raise ValueError(f"norm must be 'instance' or 'batch', got {norm!r}")
    conv, normed = _CONV[dims], _NORMS[norm]
    return nn.Sequential(
        conv(cin, cout, 3, padding=1, bias=False),
        *normed(dims, cout),
        conv(cout, cout, 3, padding=1, bias=False),
        *normed(dims, cout),
    )
