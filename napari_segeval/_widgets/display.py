"""Display presets: what a person sees of the image (its layer's contrast limits), not the model.

CT gets window/level presets in HU, other modalities percentiles of the non-zero voxels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from napari_segeval.inference.windowing import CT_WINDOWS

#: CT display windows, ``name: (level, width)`` in HU (Radiopaedia's conventional values).
CT_DISPLAY_WINDOWS: dict[str, tuple[float, float]] = {
    "abdomen": CT_WINDOWS["abdomen"],
    "liver": (30.0, 150.0),
    "mediastinum": CT_WINDOWS["mediastinum"],
    "lung": CT_WINDOWS["lung"],
    "brain": CT_WINDOWS["brain"],
    "bone": (400.0, 1800.0),
}
#: Percentile windows over the non-zero voxels, ``name: (low, high)`` in percent.
PERCENTILE_WINDOWS: dict[str, tuple[float, float]] = {
    "0.5-99.5 %": (0.5, 99.5),
    "1-99 %": (1.0, 99.0),
    "2-98 %": (2.0, 98.0),
}
FULL_RANGE = "full range"
#: At most this many voxels enter a percentile (an even stride through the array).
MAX_SAMPLES = 1_000_000


@dataclass(frozen=True)
class DisplayPreset:
    """A display preset: a CT ``window`` (level, width) in HU, ``percentiles`` (low, high) of
    the non-zero finite voxels, or (neither) the full range; ``name``: as the Case panel lists."""

    name: str
    window: tuple[float, float] | None = None
    percentiles: tuple[float, float] | None = None

    def limits(self, data: np.ndarray) -> tuple[float, float]:
        """The contrast limits this preset gives ``data`` (low < high)."""
        if self.window is not None:
            level, width = self.window
            return level - width / 2.0, level + width / 2.0
        if self.percentiles is not None:
            return percentile_limits(data, *self.percentiles)
        return _spread(*_finite_range(data))


def _spread(lo: float, hi: float) -> tuple[float, float]:
    """``(lo, hi)`` with ``hi > lo`` (a flat image still gets a usable window)."""
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _finite_range(data: np.ndarray) -> tuple[float, float]:
    values = np.asarray(data)
    if values.dtype.kind == "f":
        values = values[np.isfinite(values)]
    return (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)


def percentile_limits(data: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """Percentiles ``low`` and ``high`` (in %) of the non-zero finite voxels of ``data`` (an
    even stride beyond :data:`MAX_SAMPLES` voxels); ``(0, 1)`` with none."""
    if not 0.0 <= low < high <= 100.0:
        raise ValueError(f"percentiles must satisfy 0 <= low < high <= 100, got {low}, {high}")
    flat = np.asarray(data).reshape(-1)
    values = flat[:: max(1, flat.size // MAX_SAMPLES)]
    values = values[(values != 0) & np.isfinite(values)]
    if values.size == 0:
        return 0.0, 1.0
    lo, hi = np.percentile(values, [low, high])
    return _spread(float(lo), float(hi))


def presets_for(modality: str) -> tuple[DisplayPreset, ...]:
    """The display presets of ``modality``, the default first."""
    percentiles = tuple(DisplayPreset(k, percentiles=v) for k, v in PERCENTILE_WINDOWS.items())
    full = (DisplayPreset(FULL_RANGE),)
    if modality != "CT":
        return percentiles + full
    windows = tuple(
        DisplayPreset(f"{name} W{width:g} L{level:g}", window=(level, width))
        for name, (level, width) in CT_DISPLAY_WINDOWS.items()
    )
    return windows + percentiles[:1] + full
