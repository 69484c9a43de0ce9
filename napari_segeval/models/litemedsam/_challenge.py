"""The CVPR 2024 challenge's 3D loop (``CVPR24_LiteMedSAM_infer.py``): its boxes and chains.

The middle slice takes the 3D box; every other slice of ``[z0, z1]`` the previous
result's box (or the 3D box when it is empty); no stop, no post-processing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


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
        """The box of a ``(n, H, W)`` mask, or None when it is empty.

        Examples
        --------
        >>> m = np.zeros((5, 6, 6), bool); m[1, 1, 2] = m[3, 4, 1] = True
        >>> Box3D.from_mask(m, 2, 1)
        Box3D(label=2, value=1, xyxy=(1, 1, 2, 4), z0=1, z1=3)
        """
        zs, ys, xs = np.nonzero(mask)
        if zs.size == 0:
            return None
        return cls(
            int(label),
            int(value),
            (int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())),
            int(zs.min()),
            int(zs.max()),
        )

    @property
    def middle(self) -> int:
        """The challenge's prompted slice: ``int((z_max - z_min) / 2 + z_min)``."""
        return int((self.z1 - self.z0) / 2 + self.z0)


def chains(boxes: list[Box3D], n: int, shape: tuple[int, int]) -> list[tuple[int, Any]]:
    """Each structure's two chains (up, then down from its middle slice), with its label."""
    from . import _recipe as R
    from ._chain import Chain

    out = []
    for b in boxes:
        mid, start = b.middle, R.scale_box(b.xyxy, shape)
        for last, step in ((min(b.z1, n - 1), 1), (max(b.z0, 0), -1)):
            visits = list(range(mid, last + step, step))
            out.append((b.label, Chain(visits, {mid: start}, 0, stop_empty=False, value=b.value)))
    return out


def masks(
    run: list[tuple[int, Any]], labels: list[int], shape: tuple[int, int, int]
) -> dict[int, np.ndarray]:
    """Each structure's ``(n, H, W)`` mask from its chains' slices."""
    out = {label: np.zeros(shape, bool) for label in labels}
    for label, c in run:
        for f, crop, v in zip(c.frames, c.crops, c.values):
            if crop is not None:
                y0, x0, y1, x1 = crop
                out[label][f, y0:y1, x0:x1] |= (v > 0.5).cpu().numpy()
    return out
