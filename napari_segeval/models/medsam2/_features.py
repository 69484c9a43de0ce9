"""Image-encoder features of a frame stack, shared by every walk of a case, in bounded memory.

The image encoder does not depend on prompts or memory, so each frame's features can
serve every structure and both directions of a case. :class:`FrameFeatures` encodes
frames on demand and keeps them while they will be read again, within a byte budget:

* frames are encoded in **fixed blocks** (frames ``[q*b, (q+1)*b)``), so a frame's
  features are the same numbers whoever asks first and however often it is re-encoded
  (batched kernels need not give bit-identical results for different batches);
* the reading schedule is known in advance (:func:`napari_segeval.models.walk.walk_steps`),
  so a frame is dropped after its last read, and when the budget is exceeded the
  frame read again **furthest in the future** is dropped first (Belady's rule, the
  fewest re-encodings for a given budget); a dropped frame that is read again is
  re-encoded, with the same result.

The budget counts the features kept between reads; the block being encoded and the
frame being read are held in addition.

Between calls (a person adds a prompt and re-propagates the same case), a
:class:`FeatureStore` keeps the features of the frames tensor seen last, within the
same budget: a call given the store starts from what it holds, keeps every frame it
encodes while it fits (frames not read again in the call are dropped first), and
leaves them for the next call on the same frames. The store is bound to one frames
tensor (its identity and version counter: an in-place change invalidates it) and
is emptied when that tensor is freed.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: Default bound on cached features, in MiB (about 240 frames at 512 px in float32).
DEFAULT_CACHE_MB = 1024.0


def _nbytes(tensors: list) -> int:
    return sum(int(t.numel()) * int(t.element_size()) for t in tensors)


class FeatureStore:
    """Features of one frames tensor kept between calls (see the module doc).

    Examples
    --------
    >>> import torch
    >>> store, frames = FeatureStore(), torch.zeros(2, 3)
    >>> store.bind(frames, "float"), store.bind(frames, "float"), store.bind(frames, "pillow")
    (False, True, False)
    >>> _ = frames.add_(1)  # changed in place: the features no longer hold
    >>> store.bind(frames, "float")
    False
    """

    def __init__(self) -> None:
        self.fpn: dict[int, list] = {}
        self.size: dict[int, int] = {}
        self.pos: list | None = None
        self._ref: Any = None
        self._key: Any = None

    def bind(self, frames: Any, options: Any) -> bool:
        """Use the store for ``frames`` (with model ``options``): True when it already
        held them (their features are valid), else it is emptied and bound to them."""
        key = (getattr(frames, "_version", None), tuple(frames.shape), str(frames.dtype),
               str(getattr(frames, "device", "")), options)
        if self._ref is not None and self._ref() is frames and self._key == key:
            return True
        self.clear()
        self._ref = weakref.ref(frames, lambda _ref: self.clear())
        self._key = key
        return False

    def clear(self) -> None:
        """Drop every feature and forget the frames."""
        self.fpn.clear()
        self.size.clear()
        self.pos = None
        self._ref, self._key = None, None

    @property
    def cached_bytes(self) -> int:
        """Bytes of features kept."""
        return sum(self.size.values())


class FrameFeatures:
    """Encoder features of ``frames``, each frame encoded in its fixed block, kept within a budget.

    Parameters
    ----------
    network : sam2.modeling.sam2_base.SAM2Base
        Provides ``forward_image`` and ``_prepare_backbone_features``.
    frames : tensor
        Native normalized frames (``(n, ...)``); ``to_input(frames[a:b])`` makes the
        network input of frames ``a..b-1``.
    to_input : callable
        Native frames -> ``(m, 3, 512, 512)`` (differentiable).
    block : int
        Frames per encoder batch (and block size).
    budget_bytes : float, optional
        Bound on the bytes of features kept between reads (``None``: unbounded).
    reads : list of list of int
        The frames read at each step, in order; every :meth:`get` consumes one read.
    store : FeatureStore, optional
        Start from its features and leave every frame that fits in it (module doc);
        without it, a frame is dropped after its last read.

    Attributes
    ----------
    encoded : int
        Frames passed through the image encoder so far.
    peak_bytes : int
        Largest number of bytes of features kept between reads.
    """

    def __init__(self, network: Any, frames: Any, to_input: Callable[[Any], torch.Tensor],
                 block: int, budget_bytes: float | None, reads: list[list[int]],
                 store: FeatureStore | None = None) -> None:
        self.network = network
        self.frames = frames
        self.to_input = to_input
        self.n = int(frames.shape[0])
        self.block = max(1, int(block))
        self.budget = float("inf") if budget_bytes is None else float(budget_bytes)
        self._future: dict[int, deque[int]] = {}
        for step, frames_read in enumerate(reads):
            for t in frames_read:
                self._future.setdefault(int(t), deque()).append(step)
        self.store = store
        self.retain = store is not None
        self._fpn: dict[int, list[torch.Tensor]] = store.fpn if store is not None else {}
        self._size: dict[int, int] = store.size if store is not None else {}
        self._pos: list[torch.Tensor] | None = store.pos if store is not None else None
        self.encoded = 0
        self.peak_bytes = 0
        self._fit()

    @property
    def cached_bytes(self) -> int:
        """Bytes of features kept now."""
        return sum(self._size.values())

    def _next_read(self, t: int) -> float:
        q = self._future.get(t)
        return float(q[0]) if q else float("inf")

    def _encode_block(self, t: int) -> list[torch.Tensor]:
        """Encode the block of frame ``t``; keep what is read again; return ``t``'s features."""
        a = (t // self.block) * self.block
        b = min(self.n, a + self.block)
        out = self.network.forward_image(self.to_input(self.frames[a:b]))
        self.encoded += b - a
        if self._pos is None:  # sine position encodings depend on the shape only
            self._pos = [p[:1] for p in out["vision_pos_enc"]]
            if self.store is not None:
                self.store.pos = self._pos
        mine = [f[t - a : t - a + 1] for f in out["backbone_fpn"]]
        for i in range(a, b):
            if i != t and i not in self._fpn and (self._future.get(i) or self.retain):
                fpn = [f[i - a : i - a + 1].clone() for f in out["backbone_fpn"]]
                self._fpn[i], self._size[i] = fpn, _nbytes(fpn)
        self._fit()
        return mine

    def _fit(self) -> None:
        """Drop the frames read furthest in the future until the cache fits the budget."""
        while self._size and self.cached_bytes > self.budget:
            far = max(self._size, key=self._next_read)
            self._fpn.pop(far)
            self._size.pop(far)
        self.peak_bytes = max(self.peak_bytes, self.cached_bytes)

    def get(self, t: int) -> tuple[list, list, list]:
        """Flattened ``(vision_feats, vision_pos_embeds, feat_sizes)`` of frame ``t`` (one read)."""
        t = int(t)
        fpn = self._fpn.get(t)
        if fpn is None:
            fpn = self._encode_block(t)
        self._consume(t)
        if t not in self._fpn and (self._future.get(t) or self.retain):  # keep it if it fits
            kept = [f.clone() for f in fpn]
            self._fpn[t], self._size[t] = kept, _nbytes(kept)
            self._fit()
        backbone_out = {"backbone_fpn": list(fpn), "vision_pos_enc": list(self._pos)}
        _, feats, pos, sizes = self.network._prepare_backbone_features(backbone_out)
        return feats, pos, sizes

    def _consume(self, t: int) -> None:
        q = self._future.get(t)
        if q:
            q.popleft()
        if not q and not self.retain:
            self._fpn.pop(t, None)
            self._size.pop(t, None)

    def forget(self, t: int, step: int) -> None:
        """Cancel the read of frame ``t`` planned at ``step`` (a walk stopped early)."""
        q = self._future.get(int(t))
        if q and step in q:
            q.remove(step)
            if not q and not self.retain:
                self._fpn.pop(int(t), None)
                self._size.pop(int(t), None)

    def clear(self) -> None:
        """Drop every cached feature (and the store's)."""
        self._fpn.clear()
        self._size.clear()
        if self.store is not None:
            self.store.clear()
