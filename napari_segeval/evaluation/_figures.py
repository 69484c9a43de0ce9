"""Report pictures: label overlays (numpy + Pillow) and box plots (matplotlib, optional)."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from napari_segeval._names import CLEAN

#: Overlay colours per label id (cycled), RGB 0-255.
_COLOURS = "000000 e6194b 3cb44b ffe119 0082c8 f58230 911eb4 46f0f0 f032e6 d2f53c fabebe"
PALETTE = np.frombuffer(bytes.fromhex(_COLOURS), np.uint8).reshape(-1, 3).astype(np.float32)


def png_data_uri(rgb: np.ndarray) -> str:
    """``data:image/png;base64,...`` of an ``(H, W, 3)`` uint8 array."""
    from PIL import Image

    return _png_uri(Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).save)


def _png_uri(save: Callable[..., Any]) -> str:
    """``data:image/png;base64,...`` of the PNG that ``save(file, format="png")`` writes."""
    buf = io.BytesIO()
    save(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _pyplot():
    """``matplotlib.pyplot`` on the Agg backend (unless one was chosen before)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _figure_uri(fig, ax, ylabel: str, title: str, xlabel: str = "", grid: str = "both") -> str:
    """A matplotlib figure with its axes labelled, gridded (``grid``: which axis) and titled,
    laid out tight, as a PNG data URI; the figure is closed.
    """
    import matplotlib.pyplot as plt

    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(axis=grid, alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    uri = _png_uri(fig.savefig)
    plt.close(fig)
    return uri


def _colour(j: int) -> np.ndarray:
    """The ``j``-th series' colour (RGB 0-1): the palette past black, cycled."""
    return PALETTE[1 + j % (len(PALETTE) - 1)] / 255.0


def overlay(
    image: np.ndarray, labels: np.ndarray | None, alpha: float = 0.45, min_size: int = 128
) -> np.ndarray:
    """Grey or RGB uint8 image with coloured labels blended in, upscaled to ``min_size``."""
    img = np.asarray(image)
    rgb = np.repeat(img[..., None], 3, axis=-1) if img.ndim == 2 else img[..., :3]
    rgb = rgb.astype(np.float32)
    if labels is not None:
        lab = np.asarray(labels).astype(np.int64)
        colour = PALETTE[np.where(lab > 0, (lab - 1) % (len(PALETTE) - 1) + 1, 0)]
        fg = (lab > 0)[..., None]
        rgb = np.where(fg, (1 - alpha) * rgb + alpha * colour, rgb)
    out = np.clip(rgb, 0, 255).astype(np.uint8)
    k = max(1, int(np.ceil(min_size / max(out.shape[:2]))))
    return np.repeat(np.repeat(out, k, axis=0), k, axis=1) if k > 1 else out


def have_matplotlib() -> bool:
    """True when matplotlib can be imported (the ``report`` extra)."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def boxplot_uri(
    groups: Mapping[str, Mapping[str, Sequence[float]]],
    metric: str = "dice",
    order: Sequence[str] | None = None,
    dots: bool = False,
    title: str = "",
) -> str:
    """Box plots per structure, one box (one colour) per condition or model, as a PNG data URI.

    ``groups[structure][name]`` holds the per-case values (NaN dropped).
    ``order``: the names in legend order (default: ``clean`` first, then sorted);
    ``dots``: each value drawn as a dot over its box (the MedSAM2 paper's figure 2).
    """
    plt = _pyplot()
    structures = list(groups)
    default = sorted({c for g in groups.values() for c in g}, key=lambda c: (c != CLEAN, c))
    conditions = list(order) if order is not None else default
    width = 0.8 / max(len(conditions), 1)
    size = max(4.0, 1.3 * len(structures) * max(1, len(conditions)) ** 0.5)
    fig, ax = plt.subplots(figsize=(size, 3.2), dpi=100)
    handles = []
    for j, cond in enumerate(conditions):
        pos = [i + (j - (len(conditions) - 1) / 2) * width for i in range(len(structures))]
        data = [
            [v for v in groups[s].get(cond, []) if not np.isnan(v)] or [np.nan] for s in structures
        ]
        style = {"patch_artist": True, "showfliers": True, "manage_ticks": False}
        bp = ax.boxplot(data, positions=pos, widths=width * 0.9, **style)
        colour = _colour(j)
        for box in bp["boxes"]:
            box.set_facecolor((*colour, 0.6))
        spread = np.random.default_rng(j)  # fixed jitter: the same picture every time
        for x, values in zip(pos, data, strict=True) if dots else ():
            v = np.asarray(values, float)
            xs = x + spread.uniform(-0.3, 0.3, v.size) * width
            ax.scatter(xs, v, s=9, color=colour, edgecolors="k", linewidths=0.3, zorder=3)
        handles.append((bp["boxes"][0], cond))
    ax.set_xticks(range(len(structures)))
    ax.set_xticklabels(structures, rotation=20, ha="right", fontsize=8)
    ax.set_ylim(-0.02, 1.02)
    if len(conditions) > 1:
        ax.legend([h for h, _ in handles], [c for _, c in handles], fontsize=7, loc="lower left")
    return _figure_uri(fig, ax, metric, title, grid="y")


def scatter_uri(
    x: Sequence[float], y: Sequence[float], xlabel: str, ylabel: str, title: str = ""
) -> str:
    """A scatter plot of paired values (NaN pairs dropped) as a PNG data URI."""
    plt = _pyplot()
    a, b = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(a) & np.isfinite(b)
    fig, ax = plt.subplots(figsize=(4.2, 3.2), dpi=100)
    ax.scatter(a[ok], b[ok], s=14, color=PALETTE[4] / 255.0, alpha=0.8)
    return _figure_uri(fig, ax, ylabel, title, xlabel)


def curves_uri(
    curves: Mapping[str, Sequence[Mapping]], xlabel: str, ylabel: str, title: str
) -> str:
    """Median curves with their interquartile band, one line per name, as a PNG data URI.

    ``curves[name]`` holds one point per x = 0, 1, ... with ``median``, ``q1``, ``q3``.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.4), dpi=100)
    for j, (name, points) in enumerate(curves.items()):
        x = np.arange(len(points))
        med, lo, hi = (np.asarray([p[k] for p in points], float) for k in ("median", "q1", "q3"))
        colour = _colour(j)
        ax.fill_between(x, lo, hi, color=colour, alpha=0.2, linewidth=0)
        ax.plot(x, med, marker="o", markersize=4, color=colour, label=name)
    n = max((len(p) for p in curves.values()), default=1)
    ax.set_xticks(range(n))
    ax.set_ylim(-0.02, 1.02)
    if curves:
        ax.legend(fontsize=7, loc="lower right")
    return _figure_uri(fig, ax, ylabel, title, xlabel)
