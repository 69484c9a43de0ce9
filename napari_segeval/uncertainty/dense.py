"""Sampling uncertainty of dense models: test-time augmentation and MC-dropout."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval.uncertainty.maps import SampleStats, UncertaintyMaps, entropy

ProgressFn = Callable[[int, int], None]
#: The plain pass: no flip, gain, offset or zoom.
IDENTITY = {"flips": [], "gain": 1.0, "shift": 0.0, "scale": 1.0}


def _draw(rng: np.random.Generator, axes: Sequence[int], gain: float, shift: float, zoom: float):
    """One augmentation: flips of ``axes``, and gain, offset and zoom of these half-widths."""
    flips = [int(a) for a in axes if rng.random() < 0.5]
    return {
        "flips": flips,
        "gain": float(1.0 + rng.uniform(-gain, gain)),
        "shift": float(rng.uniform(-shift, shift)),
        "scale": float(1.0 + rng.uniform(-zoom, zoom)),
    }


def _augmented_probs(model: Any, x: Any, aug: dict, overlap: float, cancel: Any) -> np.ndarray:
    """Softmax on the model grid of one augmentation of ``x`` (1, 1, *grid), logits flipped back."""
    import torch
    import torch.nn.functional as F

    grid = tuple(x.shape[2:])
    mode = "trilinear" if len(grid) == 3 else "bilinear"
    with torch.inference_mode():
        y = x * aug["gain"] + aug["shift"]
        dims = [2 + a for a in aug["flips"]]
        if dims:
            y = torch.flip(y, dims)
        zoomed = aug["scale"] != 1.0
        if zoomed:
            size = [max(2, round(n * aug["scale"])) for n in grid]
            y = F.interpolate(y, size=size, mode=mode, align_corners=False)
        logits = model.logits(y, overlap=overlap, cancel=cancel).float()
        if zoomed:
            logits = F.interpolate(logits, size=list(grid), mode=mode, align_corners=False)
        if dims:
            logits = torch.flip(logits, dims)
        return torch.softmax(logits[0], dim=0).cpu().numpy()


def _to_case_grid(a: np.ndarray, info: Any) -> np.ndarray:
    from napari_segeval.inference.resample import resample_back

    if info.resample is None:
        return a
    return resample_back(a, info.resample, order=1, channel_axis=0)


def _finish(
    stats: SampleStats, info: Any, method: str, params: dict, note: str = ""
) -> UncertaintyMaps:
    if stats.mean is None:
        raise ValueError("no samples")
    mean = _to_case_grid(stats.mean.astype(np.float32), info)
    mean = mean / np.clip(mean.sum(0, keepdims=True), 1e-12, None)
    var = _to_case_grid(stats.variance().astype(np.float32), info).mean(0)
    mean_h = _to_case_grid(stats.mean_entropy().astype(np.float32)[None], info)[0]
    h = entropy(mean, 0, normalized=True)
    return UncertaintyMaps(
        entropy=h,
        variance=np.clip(var, 0.0, None).astype(np.float32),
        mean=mean.astype(np.float32),
        labels=mean.argmax(0).astype(np.uint8),
        mutual_information=np.clip(h - mean_h, 0.0, None).astype(np.float32),
        channels=tuple(range(mean.shape[0])),
        n_samples=stats.n,
        method=method,
        params=params,
        note=note,
    )


def dense_tta(
    model: Any,
    case: Any,
    *,
    n_samples: int = 8,
    flip_axes: Sequence[int] | None = None,
    intensity_scale: float = 0.1,
    intensity_shift: float = 0.1,
    scale_range: float = 0.1,
    include_identity: bool = True,
    overlap: float = 0.25,
    seed: int = 0,
    progress: ProgressFn | None = None,
    cancel: Any = None,
) -> UncertaintyMaps:
    """Test-time-augmentation uncertainty of a dense model on one case.

    Parameters
    ----------
    model : DenseModel
        From :func:`~napari_segeval.models.registry.load_dense`.
    case : Case
        The volume (or 2D image for a 2D network) to segment.
    n_samples : int
        Forward passes (>= 1).
    flip_axes : sequence of int, optional
        Spatial axes that may be flipped (default ``model.mirror_axes``).
    intensity_scale, intensity_shift : float
        Half-widths of the uniform gain and offset in normalized units (0: off).
    scale_range : float
        Half-width of the uniform zoom factor around 1 (0: off).
    include_identity : bool
        Sample 0 is the plain prediction.
    overlap : float
        Sliding-window overlap.
    seed : int
        Seed of the augmentation draws (recorded in ``params["augmentations"]``).
    progress : callable, optional
        ``progress(done, n_samples)`` after every sample.
    cancel : threading.Event, optional
        Checked before every sample and between window batches.

    Returns
    -------
    UncertaintyMaps
        On the case's grid; ``method == "tta"``.

    Examples
    --------
    >>> from napari_segeval.models.registry import load_dense
    >>> from napari_segeval.phantoms.ct import make_ct_case
    >>> m = dense_tta(load_dense("builtin-ct", device="cpu"),
    ...               make_ct_case(1, shape=(16, 40, 40)), n_samples=2)
    >>> m.entropy.shape, m.n_samples, float(m.variance.max()) > 0
    ((16, 40, 40), 2, True)
    """
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    axes = tuple(model.mirror_axes if flip_axes is None else flip_axes)
    widths = (intensity_scale, intensity_shift, scale_range)
    x, info = model.preprocess(case)
    ndim = x.ndim - 2
    if any(not 0 <= a < ndim for a in axes):
        raise ValueError(f"flip_axes {axes} outside the {ndim} spatial axes")
    rng = np.random.default_rng(seed)
    augs = [dict(IDENTITY, flips=[])] if include_identity else []
    augs += [_draw(rng, axes, *widths) for _ in range(n_samples - len(augs))]
    stats = SampleStats()
    for done, aug in enumerate(augs, 1):
        check_cancel(cancel, "test-time augmentation")
        stats.add(_augmented_probs(model, x, aug, overlap, cancel))
        if progress is not None:
            progress(done, n_samples)
    params = {
        "model": model.name,
        "n_samples": n_samples,
        "flip_axes": list(axes),
        "intensity_scale": intensity_scale,
        "intensity_shift": intensity_shift,
        "scale_range": scale_range,
        "overlap": overlap,
        "seed": seed,
        "augmentations": augs,
    }
    return _finish(stats, info, "tta", params)


def augmented_labels(
    model: Any,
    case: Any,
    *,
    n_samples: int = 4,
    intensity_scale: float = 0.1,
    intensity_shift: float = 0.1,
    scale_range: float = 0.1,
    overlap: float = 0.5,
    seed: int = 0,
    cancel: Any = None,
) -> list[np.ndarray]:
    """Label maps of ``n_samples`` augmented passes of a dense model, on the case's grid.

    :func:`dense_tta`'s augmentations, no identity pass (the ``tta`` risk signal).

    Examples
    --------
    >>> from napari_segeval.models.registry import load_dense
    >>> from napari_segeval.phantoms.ct import make_ct_case
    >>> maps = augmented_labels(load_dense("builtin-ct", device="cpu"),
    ...                         make_ct_case(1, shape=(16, 40, 40)), n_samples=2)
    >>> len(maps), maps[0].shape
    (2, (16, 40, 40))
    """
    x, info = model.preprocess(case)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_samples):
        check_cancel(cancel, "test-time augmentation")
        aug = _draw(rng, model.mirror_axes, intensity_scale, intensity_shift, scale_range)
        probs = _to_case_grid(_augmented_probs(model, x, aug, overlap, cancel), info)
        out.append(probs.argmax(0).astype(np.uint8))
    return out


def mc_dropout(
    model: Any,
    case: Any,
    *,
    n_samples: int = 8,
    enabled: bool = True,
    overlap: float = 0.25,
    seed: int = 0,
    progress: ProgressFn | None = None,
    cancel: Any = None,
) -> UncertaintyMaps:
    """Monte-Carlo-dropout uncertainty: dropout layers active, everything else in eval mode.

    The dropout modules are restored afterwards. A network without dropout runs one pass;
    it and ``enabled=False`` give zero variance, which ``note`` says.

    Parameters
    ----------
    model, case, overlap, progress, cancel
        As in :func:`dense_tta`.
    n_samples : int
        Forward passes with dropout on.
    enabled : bool
        False keeps dropout off (a check that the sampling is the only source of variance).
    seed : int
        ``torch.manual_seed(seed + i)`` before pass ``i``.
    """
    import torch

    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    kind = torch.nn.modules.dropout._DropoutNd  # every torch.nn dropout flavour
    drops = [m for m in model.network.modules() if isinstance(m, kind)]
    note = ""
    if not drops:
        note = "the model has no dropout layers: MC-dropout has nothing to sample (zero variance)"
        n_samples = 1
    elif not enabled:
        note = "dropout disabled: every pass is the same network (zero variance)"
    x, info = model.preprocess(case)
    modes = [m.training for m in drops]
    stats = SampleStats()
    try:
        for m in drops:
            m.train(bool(enabled))
        for i in range(n_samples):
            check_cancel(cancel, "MC-dropout")
            torch.manual_seed(int(seed) + i)
            stats.add(_augmented_probs(model, x, IDENTITY, overlap, cancel))
            if progress is not None:
                progress(i + 1, n_samples)
    finally:
        for m, mode in zip(drops, modes):
            m.train(mode)
    params = {
        "model": model.name,
        "n_samples": n_samples,
        "enabled": enabled,
        "dropout_layers": len(drops),
        "overlap": overlap,
        "seed": seed,
    }
    return _finish(stats, info, "mc-dropout", params, note)
