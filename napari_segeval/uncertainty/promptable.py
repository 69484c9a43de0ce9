"""Prompt-jitter uncertainty of promptable models (aleatoric: where would the box be?)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from napari_segeval._cancel import check_cancel
from napari_segeval.uncertainty.maps import SampleStats, UncertaintyMaps, binary_entropy

ProgressFn = Callable[[int, int], None]


def _noisy(
    frames: Any, std: float, rng: np.random.Generator, clamp: tuple[float, float] | None
) -> Any:
    import torch

    x = torch.as_tensor(frames)
    if std <= 0:
        return x  # the same tensor when given one (torch.as_tensor)
    noise = torch.from_numpy(rng.normal(0.0, std, size=tuple(x.shape)).astype(np.float32))
    y = x.float() + noise.to(x.device)
    return y.clamp(*clamp) if clamp is not None else y


def _jittered(prompts: Any, jitter: int, rng: np.random.Generator, shape: tuple) -> Any:
    """The prompt set with each box jittered (in order; points and masks kept)."""
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.prompt_set import PromptSet

    return PromptSet(
        prompts.label,
        tuple(p.jittered(jitter, rng, shape) if isinstance(p, Box) else p for p in prompts.prompts),
    )


def prompt_tta(
    model: Any,
    frames: Any,
    prompts: Sequence[Any],
    *,
    mode: str = "volume",
    n_samples: int = 8,
    jitter: int = 3,
    noise_std: float = 0.02,
    clamp: tuple[float, float] | None = None,
    include_clean: bool = True,
    seed: int = 0,
    threshold: float = 0.5,
    progress: ProgressFn | None = None,
    cancel: Any = None,
) -> UncertaintyMaps:
    """Uncertainty of a promptable model from box jitter and intensity noise.

    Parameters
    ----------
    model : PromptableModel
        Backend (:mod:`napari_segeval.models.base`).
    frames : tensor or array ``(n, H, W[, C])``
        Input in the model's normalized units (``model.preprocess(...)``).
    prompts : dict of int to PromptSet, or sequence of Box and PromptSet
        One box or prompt set per structure.
    mode : {"volume", "video"}
        As in :func:`~napari_segeval.propagation.propagate_case`.
    n_samples : int
        Propagations (>= 1).
    jitter : int
        Largest shift of a box edge in pixels (0: boxes fixed).
    noise_std : float
        Standard deviation of the intensity noise, normalized units (0: off, and a backend
        that keeps per-frame features encodes the frames only once).
    clamp : (float, float), optional
        Clamp noisy frames to this normalized range.
    include_clean : bool
        Sample 0 uses the given boxes and frames unchanged.
    seed : int
        Seed of the jitter and noise draws.
    threshold : float
        Foreground threshold of the mean probabilities for ``labels``.
    progress : callable, optional
        ``progress(done, total)`` over all samples' propagation steps.
    cancel : threading.Event, optional
        Checked before every sample and every propagation step.

    Returns
    -------
    UncertaintyMaps
        ``mean`` is ``(S, n, H, W)``: one foreground probability per structure
        (``channels`` = the structure ids); ``method == "prompt-jitter"``.
    """
    from napari_segeval.models.base import Corrections
    from napari_segeval.propagation import (
        PropagationOptions,
        as_prompt_sets,
        merge_structures,
        propagate_case,
    )
    from napari_segeval.propagation.core import shifted_progress, total_steps
    from napari_segeval.propagation.corrections import corrects, rule_of

    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if not prompts:
        raise ValueError("prompt_tta needs at least one box prompt")
    sets = as_prompt_sets(prompts)
    shape = tuple(int(s) for s in frames.shape[1:3])
    rng = np.random.default_rng(seed)
    options = PropagationOptions(mode=mode)
    rule = rule_of(model) if corrects(model, options) else Corrections.NONE
    per_sample = total_steps(int(frames.shape[0]), sets, mode, corrections=rule)
    total = per_sample * n_samples
    cache = model.feature_cache() if noise_std <= 0 else None
    if cache is not None:  # one tensor for every sample, so the kept embeddings stay bound to it
        import torch

        frames = torch.as_tensor(frames)
    stats = {label: SampleStats(binary=True) for label in sets}
    drawn = []
    for i in range(n_samples):
        check_cancel(cancel, "prompt jitter")
        clean = i == 0 and include_clean
        drawn_sets = (
            sets if clean else {lab: _jittered(s, jitter, rng, shape) for lab, s in sets.items()}
        )
        x = frames if clean else _noisy(frames, noise_std, rng, clamp)
        drawn.append([[b.y0, b.x0, b.y1, b.x1] for s in drawn_sets.values() for b in s.boxes])
        cb = shifted_progress(progress, i * per_sample, total)
        res = propagate_case(model, x, drawn_sets, options, progress=cb, cancel=cancel, cache=cache)
        for label, p in res.probabilities.items():
            stats[label].add(np.asarray(p, np.float32))
    labels_order = tuple(sets)
    # variance() first: a structure without samples is a ValueError, not a None mean
    var = np.stack([stats[k].variance() for k in labels_order]).astype(np.float32)
    mean = np.stack([cast(np.ndarray, stats[k].mean) for k in labels_order]).astype(np.float32)
    h_each = np.stack([binary_entropy(m) for m in mean])
    mean_h = np.stack([stats[k].mean_entropy() for k in labels_order])
    merged = merge_structures(dict(zip(labels_order, mean)), threshold=threshold)
    params = {
        "model": model.name,
        "mode": mode,
        "n_samples": n_samples,
        "jitter": jitter,
        "noise_std": noise_std,
        "clamp": list(clamp) if clamp is not None else None,
        "seed": seed,
        "include_clean": include_clean,
        "boxes": drawn,
    }
    return UncertaintyMaps(
        entropy=h_each.max(0),
        variance=var.max(0),
        mean=mean,
        labels=merged,
        mutual_information=np.clip(h_each - mean_h, 0.0, None).max(0).astype(np.float32),
        channels=labels_order,
        n_samples=n_samples,
        method="prompt-jitter",
        params=params,
    )
