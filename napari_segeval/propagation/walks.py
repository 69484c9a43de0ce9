"""Running walks (one structure, one direction) through a backend, and combining them.

The pieces of :func:`~napari_segeval.propagation.core.propagate_case` that talk to the
backend: which calibrated confidence stop applies, where a walk stops, how the walks
of a case are given to the backend (all at once when it can share work), and how the
forward and backward walks of a structure become one probability volume.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from napari_segeval.models.base import ProgressFn, PromptableModel, Walk, n_visited

if TYPE_CHECKING:  # pragma: no cover
    import threading
    from collections.abc import Callable

    import torch


def resolve_min_confidence(model: Any, min_confidence: float | str | None) -> float | None:
    """``"auto"`` -> ``model.stop_confidence`` (``None`` when absent); else the value.

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
            raise ValueError(f"min_confidence must be a number, None or 'auto', "
                             f"got {min_confidence!r}")
        value = getattr(model, "stop_confidence", None)
        return None if value is None else float(value)
    return None if min_confidence is None else float(min_confidence)


def confidence_stop(probs: Any, min_confidence: float | None, threshold: float = 0.5) -> int:
    """Number of leading frames of one direction to keep (see the module doc).

    ``probs`` is ``(m, H, W)`` with the key frame first. Frames without
    foreground do not stop the walk (``stop_when_empty`` handles them).

    Examples
    --------
    >>> import torch
    >>> p = torch.zeros(4, 2, 2); p[0, 0, 0] = 0.95; p[1, 0, 0] = 0.9; p[2, 0, 0] = 0.6
    >>> confidence_stop(p, 0.75), confidence_stop(p, None)
    (2, 4)
    """
    m = int(probs.shape[0])
    if min_confidence is None or m <= 1:
        return m
    p = probs.detach().float()
    fg = p > threshold
    count = fg.flatten(1).sum(dim=1)
    mean = (p * fg).flatten(1).sum(dim=1) / count.clamp(min=1)
    low = ((count > 0) & (mean < float(min_confidence))).tolist()
    for j in range(1, m):
        if low[j]:
            return j
    return m



def _takes(method: Any, name: str) -> bool:
    """Whether ``method`` names the keyword ``name`` (a bare ``**kwargs`` does not count)."""
    import inspect

    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _report_walk(on_frame: Callable[[int, int, Any], None], i: int, walk: Walk, n: int,
                 seq: Any) -> None:
    """Report a finished walk's frames (backends without ``on_frame``)."""
    for j, f in enumerate(walk.frames(n).tolist()):
        on_frame(i, f, seq[j].detach())


def _all_at_once(method: Any, frames: Any, walks: list[Walk], on_frame: Any,
                 as_probability: Callable[[Any], Any], *, cache_mb: float | None,
                 **kw: Any) -> list[torch.Tensor]:
    """Call a backend's all-walks ``method``; report frames live or, if it cannot, afterwards."""
    extra = {} if cache_mb is None else {"cache_mb": cache_mb}
    live = on_frame is not None and _takes(method, "on_frame")
    if live:
        extra["on_frame"] = on_frame
    seqs = method(frames, walks, **kw, **extra)
    if on_frame is not None and not live:
        n = int(frames.shape[0])
        for i, (w, seq) in enumerate(zip(walks, seqs)):
            _report_walk(on_frame, i, w, n, as_probability(seq))
    return seqs


def run_walks(model: PromptableModel, frames: Any, walks: list[Walk], *,
              progress: ProgressFn | None = None, cancel: threading.Event | None = None,
              stop_when_empty: bool = True, grad: bool = False,
              cache_mb: float | None = None,
              on_frame: Callable[[int, int, Any], None] | None = None,
              logits: bool = False) -> list[torch.Tensor]:
    """Probabilities of each walk: one ``propagate_walks`` call, or one ``propagate`` each.

    ``progress(done, total)`` counts the steps of all walks. ``on_frame(i, frame,
    prob)`` (optional) hears walk ``i``'s probability on each frame as it is
    computed, or when the walk returns for backends that cannot report steps
    (module doc); it never changes the result. ``logits=True`` returns logits
    instead: the backend's own (``walk_logits``) when it has them, else the logit
    of its probabilities (``on_frame`` still hears probabilities).

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
    n = int(frames.shape[0])
    if logits and hasattr(model, "walk_logits"):
        import torch

        return _all_at_once(model.walk_logits, frames, walks, on_frame,
                            lambda seq: torch.sigmoid(seq.detach().float()), progress=progress,
                            cancel=cancel, stop_when_empty=stop_when_empty, grad=grad,
                            cache_mb=cache_mb)
    if logits:
        import torch

        probs = run_walks(model, frames, walks, progress=progress, cancel=cancel,
                          stop_when_empty=stop_when_empty, grad=grad, cache_mb=cache_mb,
                          on_frame=on_frame)
        return [torch.logit(p.float()) for p in probs]
    if hasattr(model, "propagate_walks"):
        return _all_at_once(model.propagate_walks, frames, walks, on_frame, lambda seq: seq,
                            progress=progress, cancel=cancel, stop_when_empty=stop_when_empty,
                            grad=grad, cache_mb=cache_mb)
    total = sum(n_visited(n, w.key_index, w.order) for w in walks)
    live = on_frame is not None and _takes(model.propagate, "on_frame")
    out, offset = [], 0
    for number, w in enumerate(walks):
        def cb(i: int, _t: int, _offset: int = offset) -> None:
            if progress is not None:
                progress(_offset + i, total)

        extra = {} if w.prior_volume is None else {"prior_volume": w.prior_volume}
        if w.init_mask is not None:
            extra["init_mask"] = w.init_mask
        if live:
            extra["on_frame"] = lambda _i, f, p, _n=number: on_frame(_n, f, p)
        out.append(model.propagate(frames, w.key_index, w.box, w.order, progress=cb,
                                   cancel=cancel, stop_when_empty=stop_when_empty, grad=grad,
                                   **extra))
        if on_frame is not None and not live:
            _report_walk(on_frame, number, w, n, out[-1])
        offset += n_visited(n, w.key_index, w.order)
    return out


def combine_walks(parts: dict[str, torch.Tensor], key_index: int, mode: str,
                  min_confidence: float | None, threshold: float = 0.5,
                  logits: bool = False) -> torch.Tensor:
    """One structure's ``(n, H, W)`` probability from its walks (confidence stop, then union).

    ``parts`` maps ``"forward"`` (and ``"backward"`` for volumes) to the walk's
    probabilities in visit order (logits with ``logits=True``: the confidence
    stop reads their sigmoid at 0.5, cut and unvisited frames get ``-inf``).

    Examples
    --------
    >>> import torch
    >>> fwd, bwd = torch.full((2, 1, 1), 0.9), torch.full((3, 1, 1), 0.8)
    >>> combine_walks({"forward": fwd, "backward": bwd}, 2, "volume", None).flatten().tolist()
    [0.800000011920929, 0.800000011920929, 0.8999999761581421, 0.8999999761581421]
    """
    import torch

    empty = float("-inf") if logits else 0.0
    cut = {}
    for order, seq in parts.items():
        if logits:
            keep = confidence_stop(torch.sigmoid(seq), min_confidence, 0.5)
        else:
            keep = confidence_stop(seq, min_confidence, threshold)
        if keep < seq.shape[0]:
            seq = torch.cat([seq[:keep], torch.full_like(seq[keep:], empty)], dim=0)
        cut[order] = seq
    fwd = cut["forward"]
    h, w = fwd.shape[1:]
    pieces = []
    if mode == "volume":
        bwd = cut["backward"]
        pieces.append(torch.flip(bwd[1:], dims=(0,)))
        pieces.append(torch.maximum(fwd[:1], bwd[:1]))
    else:
        pieces.append(torch.full((key_index, h, w), empty, dtype=fwd.dtype, device=fwd.device))
        pieces.append(fwd[:1])
    pieces.append(fwd[1:])
    return torch.cat(pieces, dim=0)
