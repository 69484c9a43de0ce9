"""Running walks (one structure, one direction) through a backend, and combining them.

The pieces of :func:`~napari_segeval.propagation.core.propagate_case` that talk to the
backend: which calibrated confidence stop applies, where a walk stops (never before its
last conditioning frame), how the walks of a case are given to the backend (all at once
when it can share work), and how the forward and backward walks of a structure become
one probability crop (:func:`structure_crop`: the bounding box of what the walks
computed, never a full-size volume per structure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from napari_segeval.models.base import ProgressFn, PromptableModel
from napari_segeval.models.walk import Walk, WalkOutput, n_visited
from napari_segeval.prompts.box import Box

if TYPE_CHECKING:  # pragma: no cover
    import threading
    from collections.abc import Callable


def resolve_min_confidence(
    model: PromptableModel, min_confidence: float | str | None
) -> float | None:
    """``"auto"`` -> the stop ``model`` declares (``capabilities.stop_confidence``, None
    for none); else the value.

    Examples
    --------
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> resolve_min_confidence(ThresholdPromptModel(), "auto") is None
    True
    >>> resolve_min_confidence(ThresholdPromptModel(), 0.7)
    0.7
    """
    if isinstance(min_confidence, str):
        if min_confidence != "auto":
            raise ValueError(
                f"min_confidence must be a number, None or 'auto', got {min_confidence!r}"
            )
        value = model.capabilities.stop_confidence
        return None if value is None else float(value)
    return None if min_confidence is None else float(min_confidence)


def confidence_stop(
    probs: Any, min_confidence: float | None, threshold: float = 0.5, first: int = 0
) -> int:
    """Number of leading frames of one direction to keep (see the module doc).

    ``probs`` is ``(m, H, W)`` with the start frame first. Frames without
    foreground do not stop the walk (``stop_when_empty`` handles them), nor do the
    first ``first + 1`` frames (a walk never stops before its last conditioning
    frame, at visit position ``first``).

    Examples
    --------
    >>> import torch
    >>> p = torch.zeros(4, 2, 2); p[0, 0, 0] = 0.95; p[1, 0, 0] = 0.9; p[2, 0, 0] = 0.6
    >>> confidence_stop(p, 0.75), confidence_stop(p, None), confidence_stop(p, 0.75, first=2)
    (2, 4, 4)
    """
    m = int(probs.shape[0])
    if min_confidence is None or m <= 1:
        return m
    p = probs.detach().float()
    fg = p > threshold
    count = fg.flatten(1).sum(dim=1)
    mean = (p * fg).flatten(1).sum(dim=1) / count.clamp(min=1)
    return _first_low(count.tolist(), mean.tolist(), min_confidence, first, m)


def _first_low(counts: list, means: list, min_confidence: float, first: int, m: int) -> int:
    for j in range(max(1, int(first) + 1), m):
        if counts[j] > 0 and means[j] < float(min_confidence):
            return j
    return m


def output_stop(
    out: WalkOutput,
    min_confidence: float | None,
    threshold: float = 0.5,
    first: int = 0,
    logits: bool = False,
) -> int:
    """:func:`confidence_stop` of a cropped walk (``logits``: of its sigmoid at 0.5)."""
    import torch

    m = len(out)
    if min_confidence is None or m <= 1:
        return m
    counts, means = [], []
    for v in out.values:
        if v is None:
            counts.append(0)
            means.append(0.0)
            continue
        p = torch.sigmoid(v.detach().float()) if logits else v.detach().float()
        fg = p > (0.5 if logits else threshold)
        count = fg.sum()
        counts.append(int(count))
        means.append(float((p * fg).sum() / count.clamp(min=1)))
    return _first_low(counts, means, min_confidence, first, m)


def _as_outputs(seqs: list, walks: list[Walk], n: int, fill: float) -> list[WalkOutput]:
    """Full-size walk tensors as :class:`WalkOutput` objects (unchanged if already)."""
    return [
        s if isinstance(s, WalkOutput) else WalkOutput.from_full(w.frames(n), s, fill)
        for s, w in zip(seqs, walks)
    ]


def _report_walk(on_frame: Callable[[int, int, Any], None], i: int, out: WalkOutput) -> None:
    """Report a finished walk's frames (backends without ``on_frame``)."""
    for j, f in enumerate(out.frames):
        on_frame(i, f, out.row(j).detach())


def _all_at_once(
    method: Any,
    frames: Any,
    walks: list[Walk],
    on_frame: Any,
    fill: float,
    *,
    cache_mb: float | None,
    features: Any = None,
    **kw: Any,
) -> list[WalkOutput]:
    """Call a backend's all-walks ``method`` (``propagate_walks`` or ``walk_logits``: the
    keywords of :class:`~napari_segeval.models.base.SharedPropagation`); it reports
    frames live. ``features``: the backend's per-case cache (only for a backend that
    declares ``frame_features``)."""
    extra = {} if cache_mb is None else {"cache_mb": cache_mb}
    if features is not None:
        extra["features"] = features
    if on_frame is not None:
        extra["on_frame"] = on_frame
    return _as_outputs(
        method(frames, walks, **kw, crops=True, **extra), walks, int(frames.shape[0]), fill
    )


def _one_by_one(
    model: PromptableModel,
    frames: Any,
    walks: list[Walk],
    *,
    progress: Any,
    cancel: Any,
    stop_when_empty: bool,
    grad: bool,
    on_frame: Any,
) -> list[WalkOutput]:
    """One ``propagate`` call per walk (backends without ``propagate_walks``)."""
    n = int(frames.shape[0])
    total = sum(n_visited(n, w.start, w.order) for w in walks)
    live = on_frame is not None and model.capabilities.live_frames
    out, offset = [], 0
    for number, w in enumerate(walks):

        def cb(i: int, _t: int, _offset: int = offset) -> None:
            if progress is not None:
                progress(_offset + i, total)

        extra = {} if w.prior_volume is None else {"prior_volume": w.prior_volume}
        if live:
            extra["on_frame"] = lambda _i, f, p, _n=number: on_frame(_n, f, p)
        one = w.prompts.prompts
        prompt = one[0] if len(one) == 1 and isinstance(one[0], Box) else w.prompts
        seq = model.propagate(
            frames,
            w.start,
            prompt,
            w.order,
            progress=cb,
            cancel=cancel,
            stop_when_empty=stop_when_empty,
            grad=grad,
            **extra,
        )
        out.append(WalkOutput.from_full(w.frames(n), seq))
        if on_frame is not None and not live:
            _report_walk(on_frame, number, out[-1])
        offset += n_visited(n, w.start, w.order)
    return out


def run_walks(
    model: PromptableModel,
    frames: Any,
    walks: list[Walk],
    *,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    stop_when_empty: bool = True,
    grad: bool = False,
    cache_mb: float | None = None,
    on_frame: Callable[[int, int, Any], None] | None = None,
    logits: bool = False,
    crops: bool = False,
    cache: Any = None,
) -> list:
    """Probabilities of each walk: one ``propagate_walks`` call, or one ``propagate`` each.

    ``progress(done, total)`` counts the steps of all walks. ``on_frame(i, frame,
    prob)`` (optional) hears walk ``i``'s probability on each frame as it is
    computed, or when the walk returns for backends that cannot report steps
    (module doc); it never changes the result. ``logits=True`` returns logits
    instead: the backend's own (``walk_logits``) when it has them, else the logit
    of its probabilities (``on_frame`` still hears probabilities). ``crops=True``
    returns :class:`~napari_segeval.models.walk.WalkOutput` objects (each frame
    cropped where the backend crops, full frames otherwise) instead of
    ``(n_visited, H, W)`` tensors. ``cache`` is the backend's per-case cache
    (``model.feature_cache()``), given as its ``features`` keyword. Which calls are made
    is what the backend declares (``model.capabilities``: ``shared_walks``, ``logits``,
    ``frame_features``, ``live_frames``).

    Examples
    --------
    >>> import numpy as np
    >>> from napari_segeval.models.threshold import ThresholdPromptModel
    >>> from napari_segeval.prompts.box import Box
    >>> box = Box(2, 2, 4, 4, index=2)
    >>> walks = [Walk(2, box, "forward"), Walk(2, box, "backward")]
    >>> [tuple(p.shape) for p in run_walks(ThresholdPromptModel(), np.ones((5, 8, 8)), walks)]
    [(3, 8, 8), (3, 8, 8)]
    """
    import torch

    caps = model.capabilities
    common = {
        "progress": progress,
        "cancel": cancel,
        "stop_when_empty": stop_when_empty,
        "grad": grad,
    }
    features = cache if caps.frame_features else None
    if logits and caps.logits:
        outs = _all_at_once(
            model.walk_logits,
            frames,
            walks,
            on_frame,
            float("-inf"),
            cache_mb=cache_mb,
            features=features,
            **common,
        )
    elif caps.shared_walks:
        outs = _all_at_once(
            model.propagate_walks,
            frames,
            walks,
            on_frame,
            0.0,
            cache_mb=cache_mb,
            features=features,
            **common,
        )
    else:
        outs = _one_by_one(model, frames, walks, on_frame=on_frame, **common)
    if logits and not caps.logits:
        outs = [o.map(lambda v: torch.logit(v.float()), float("-inf")) for o in outs]
    return outs if crops else [o.full() for o in outs]


def structure_crop(
    parts: list[tuple[Walk, WalkOutput]],
    min_confidence: float | None,
    threshold: float = 0.5,
    logits: bool = False,
) -> tuple[tuple[int, int, int], Any]:
    """One structure's ``(offset, crop)`` from its walks (confidence stop, then union).

    Each walk is cut at its confidence stop (never before its last conditioning
    frame); a frame reached by two walks (a forward and a backward walk, on and
    between the conditioning frames) takes their maximum. The crop is the bounding
    box of every frame's values; outside it the structure is 0 (``-inf`` for logits).
    Differentiable.

    Examples
    --------
    >>> import torch
    >>> from napari_segeval.prompts.box import Box
    >>> box = Box(0, 0, 1, 1, index=1)
    >>> fwd = WalkOutput([1, 2], [(0, 0, 1, 1), None], [torch.full((1, 1), 0.9), None], (2, 2))
    >>> bwd = WalkOutput([1, 0], [(1, 1, 2, 2)] * 2, [torch.full((1, 1), 0.8)] * 2, (2, 2))
    >>> offset, crop = structure_crop([(Walk(1, box, "forward"), fwd),
    ...                                (Walk(1, box, "backward"), bwd)], None)
    >>> offset, tuple(crop.shape), crop[1].tolist()
    ((0, 0, 0), (2, 2, 2), [[0.8999999761581421, 0.0], [0.0, 0.800000011920929]])
    """
    import torch
    import torch.nn.functional as F

    fill = float("-inf") if logits else 0.0
    pieces: dict[int, list] = {}
    for walk, out in parts:
        keep = output_stop(out, min_confidence, threshold, walk.last_conditioning_step(), logits)
        for j in range(keep):
            if out.boxes[j] is not None:
                pieces.setdefault(int(out.frames[j]), []).append((out.boxes[j], out.values[j]))
    if not pieces:
        return (0, 0, 0), torch.zeros((0, 0, 0))
    boxes = [b for ps in pieces.values() for b, _ in ps]
    y0, x0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
    y1, x1 = max(b[2] for b in boxes), max(b[3] for b in boxes)
    z0, z1 = min(pieces), max(pieces) + 1
    ref = next(iter(pieces.values()))[0][1]
    rows = []
    for f in range(z0, z1):
        row = None
        for (a, b, c, d), v in pieces.get(f, ()):
            v = F.pad(v, (b - x0, x1 - d, a - y0, y1 - c), value=fill)
            row = v if row is None else torch.maximum(row, v)
        rows.append(
            row
            if row is not None
            else torch.full((y1 - y0, x1 - x0), fill, dtype=ref.dtype, device=ref.device)
        )
    return (z0, y0, x0), torch.stack(rows)
