"""Box prompts: one rectangle on one slice/frame for one structure.

Inclusive-exclusive array indices (a one-pixel object at ``(5, 7)`` has the box ``(5, 7, 6,
8)``); napari rectangles are corner vertices at pixel centres (``[[z, y0, x0], ...]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class Box:
    """An axis-aligned box prompt on one slice or frame.

    Parameters
    ----------
    y0, x0, y1, x1
        Array-index bounds on the slice, inclusive-exclusive (``y0 <= y < y1``).
    index
        Slice (volume) or frame (video) index along the first array axis; 0 for 2D.
    label
        Structure label id the box is for (``>= 1``).

    Examples
    --------
    >>> b = Box(2, 3, 6, 9, index=4, label=1)
    >>> b.height, b.width
    (4, 6)
    >>> int(b.to_mask((8, 10)).sum())
    24
    """

    y0: int
    x0: int
    y1: int
    x1: int
    index: int = 0
    label: int = 1

    def __post_init__(self) -> None:
        for name in ("y0", "x0", "y1", "x1", "index", "label"):
            object.__setattr__(self, name, int(getattr(self, name)))
        if self.y1 <= self.y0 or self.x1 <= self.x0:
            raise ValueError(
                f"empty box: need y0 < y1 and x0 < x1, got "
                f"(y0={self.y0}, x0={self.x0}, y1={self.y1}, x1={self.x1})"
            )

    @property
    def height(self) -> int:
        """Number of rows covered."""
        return self.y1 - self.y0

    @property
    def width(self) -> int:
        """Number of columns covered."""
        return self.x1 - self.x0

    def clip(self, shape: Sequence[int]) -> Box:
        """Return the box clipped to a slice of ``shape = (H, W)`` (at least one pixel).

        Examples
        --------
        >>> Box(-3, -1, 20, 4).clip((10, 10))
        Box(y0=0, x0=0, y1=10, x1=4, index=0, label=1)
        """
        h, w = int(shape[0]), int(shape[1])
        y0, x0 = min(max(self.y0, 0), h - 1), min(max(self.x0, 0), w - 1)
        return replace(
            self, y0=y0, x0=x0, y1=max(min(self.y1, h), y0 + 1), x1=max(min(self.x1, w), x0 + 1)
        )

    def to_mask(self, shape: Sequence[int]) -> np.ndarray:
        """Boolean ``(H, W)`` mask that is True inside the (clipped) box."""
        b = self.clip(shape)
        m = np.zeros((int(shape[0]), int(shape[1])), dtype=bool)
        m[b.y0 : b.y1, b.x0 : b.x1] = True
        return m

    def to_napari(self, ndim: int = 3) -> np.ndarray:
        """napari Shapes rectangle: 4 vertices ``(z, y, x)`` (or ``(y, x)`` if ``ndim=2``)."""
        ya, yb, xa, xb = self.y0, self.y1 - 1, self.x0, self.x1 - 1
        corners = np.array([[ya, xa], [ya, xb], [yb, xb], [yb, xa]], dtype=float)
        if ndim == 2:
            return corners
        lead = np.zeros((4, ndim - 2), dtype=float)
        lead[:, -1] = self.index
        return np.concatenate([lead, corners], axis=1)

    @classmethod
    def from_napari(cls, vertices: np.ndarray, label: int = 1, index: int | None = None) -> Box:
        """Box from napari rectangle (or polygon) vertices: last two columns ``(y, x)``, the one
        before the slice index; covers every pixel whose centre lies inside.
        """
        v = np.asarray(vertices, dtype=float)
        if v.ndim != 2 or v.shape[1] < 2 or v.shape[0] < 2:
            raise ValueError(f"expected (n_vertices, ndim) rectangle vertices, got {v.shape}")
        ys, xs = v[:, -2], v[:, -1]
        if index is None:
            index = round(float(np.median(v[:, -3]))) if v.shape[1] >= 3 else 0
        y0, y1 = int(np.ceil(ys.min() - 1e-6)), int(np.floor(ys.max() + 1e-6)) + 1
        x0, x1 = int(np.ceil(xs.min() - 1e-6)), int(np.floor(xs.max() + 1e-6)) + 1
        return cls(y0, x0, max(y1, y0 + 1), max(x1, x0 + 1), index=index, label=label)

    @classmethod
    def from_mask(cls, mask: np.ndarray, index: int = 0, label: int = 1) -> Box:
        """Tight bounding box of a non-empty 2D boolean mask."""
        m = np.asarray(mask, dtype=bool)
        if m.ndim != 2:
            raise ValueError(f"expected a 2D mask, got shape {m.shape}")
        ys, xs = np.nonzero(m)
        if ys.size == 0:
            raise ValueError(f"structure {label} is empty on slice {index}: no box")
        return cls(ys.min(), xs.min(), ys.max() + 1, xs.max() + 1, index=index, label=label)

    def jittered(
        self, pixels: int, rng: np.random.Generator, shape: Sequence[int], mode: str = "edges"
    ) -> Box:
        """A jittered box, clipped to ``shape``.

        ``mode="edges"``: each edge moves by an integer in ``[-pixels, pixels]``;
        ``mode="outward"`` (MedSAM2's ``mask2D_to_bbox``): one ``s`` in ``[0, pixels]`` widens
        all four sides.
        """
        if mode not in ("edges", "outward"):
            raise ValueError(f"jitter mode must be 'edges' or 'outward', got {mode!r}")
        if pixels <= 0:
            return self.clip(shape)
        if mode == "outward":
            s = int(rng.integers(0, int(pixels) + 1))
            return replace(
                self, y0=self.y0 - s, x0=self.x0 - s, y1=self.y1 + s, x1=self.x1 + s
            ).clip(shape)
        d = rng.integers(-int(pixels), int(pixels) + 1, size=4)
        y0, x0, y1, x1 = self.y0 + d[0], self.x0 + d[1], self.y1 + d[2], self.x1 + d[3]
        return replace(self, y0=y0, x0=x0, y1=max(y1, y0 + 1), x1=max(x1, x0 + 1)).clip(shape)
