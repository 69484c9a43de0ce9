"""Per-frame encoder outputs shared by every walk of a case, in bounded memory.

Frames are encoded in fixed blocks (the same numbers whoever asks first); over the byte
budget the frame read again furthest ahead is dropped (Belady's rule).
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from napari_segeval.models.walk import WalkOptions

#: Default bound on cached features, in MiB.
DEFAULT_CACHE_MB = 1024.0


def _nbytes(tensors: list) -> int:
    return sum(int(t.numel()) * int(t.element_size()) for t in tensors)


class FrameStore:
    """Features of one frames tensor kept between calls (bound to its identity and version)."""

    def __init__(self) -> None:
        self.features: dict[int, list] = {}
        self.size: dict[int, int] = {}
        #: Anything else a backend keeps with the features (MedSAM2: position encodings).
        self.extra: dict[str, Any] = {}
        self._ref: Any = None
        self._key: Any = None

    def bind(self, frames: Any, options: Any) -> bool:
        """Bind to ``frames`` and model ``options``: True when already bound (features valid)."""
        key = (
            getattr(frames, "_version", None),
            tuple(frames.shape),
            str(frames.dtype),
            str(getattr(frames, "device", "")),
            options,
        )
        if self._ref is not None and self._ref() is frames and self._key == key:
            return True
        self.clear()
        self._ref = weakref.ref(frames, lambda _ref: self.clear())
        self._key = key
        return False

    def clear(self) -> None:
        """Drop every feature and forget the frames."""
        self.features.clear()
        self.size.clear()
        self.extra.clear()
        self._ref, self._key = None, None

    @property
    def cached_bytes(self) -> int:
        """Bytes of features kept."""
        return sum(self.size.values())

    def __len__(self) -> int:
        return len(self.features)


class KeepsFeatures:
    """A backend keeping a case's frame features between calls and ``cache_mb`` MiB in a run."""

    cache_mb: float | None

    def feature_cache(self) -> FrameStore:
        """A store of one case's frame features, for every call on its frames."""
        return FrameStore()

    def run_cache(
        self, frames: Any, options: WalkOptions, key: Any
    ) -> tuple[FrameStore | None, float | None]:
        """A run's store (``options.features`` bound to ``frames`` and model options ``key``;
        None under gradients) and byte budget (``options.cache_mb``, else the model's)."""
        store = options.features if not options.grad and hasattr(frames, "_version") else None
        if store is not None:
            store.bind(frames, key)
        cache_mb = self.cache_mb if options.cache_mb is None else options.cache_mb
        return store, None if cache_mb is None else float(cache_mb) * 2**20


class FrameCache:
    """Features of ``n`` frames within a budget; ``encode(a, b)``: a tensor list per frame."""

    def __init__(
        self,
        encode: Callable[[int, int], list[list[Any]]],
        n: int,
        block: int,
        budget_bytes: float | None,
        reads: list[list[int]],
        store: FrameStore | None = None,
    ) -> None:
        self.encode = encode
        self.n = int(n)
        self.block = max(1, int(block))
        self.budget = float("inf") if budget_bytes is None else float(budget_bytes)
        self._future: dict[int, deque[int]] = {}
        for step, frames_read in enumerate(reads):
            for t in frames_read:
                self._future.setdefault(int(t), deque()).append(step)
        self.retain = store is not None  # a store keeps every frame for the next call
        self.store = store if store is not None else FrameStore()
        self._kept, self._size = self.store.features, self.store.size
        self.encoded = 0
        self.peak_bytes = 0
        self._fit()

    @property
    def cached_bytes(self) -> int:
        """Bytes of features kept now."""
        return self.store.cached_bytes

    def _next_read(self, t: int) -> float:
        q = self._future.get(t)
        return float(q[0]) if q else float("inf")

    def _keep(self, t: int, features: list) -> None:
        kept = [f.clone() for f in features]  # not a view of the whole block
        self._kept[t], self._size[t] = kept, _nbytes(kept)

    def _encode_block(self, t: int) -> list:
        """Encode the block of frame ``t``; keep what is read again; return ``t``'s features."""
        a = (t // self.block) * self.block
        b = min(self.n, a + self.block)
        out = self.encode(a, b)
        self.encoded += b - a
        for i in range(a, b):
            if i != t and i not in self._kept and (self._future.get(i) or self.retain):
                self._keep(i, out[i - a])
        self._fit()
        return list(out[t - a])

    def _fit(self) -> None:
        """Drop the frames read furthest in the future until the cache fits the budget."""
        while self._size and self.cached_bytes > self.budget:
            self._drop(max(self._size, key=self._next_read))
        self.peak_bytes = max(self.peak_bytes, self.cached_bytes)

    def get(self, t: int) -> list:
        """The features of frame ``t`` (one read)."""
        t = int(t)
        features = self._kept.get(t)
        if features is None:
            features = self._encode_block(t)
        self._consume(t)
        if t not in self._kept and (self._future.get(t) or self.retain):  # keep it if it fits
            self._keep(t, features)
            self._fit()
        return list(features)

    def _consume(self, t: int) -> None:
        q = self._future.get(t)
        if q:
            q.popleft()
        if not q and not self.retain:
            self._drop(t)

    def _drop(self, t: int) -> None:
        self._kept.pop(t, None)
        self._size.pop(t, None)

    def forget(self, t: int, step: int) -> None:
        """Cancel the read of frame ``t`` planned at ``step`` (a walk stopped early)."""
        q = self._future.get(int(t))
        if q and step in q:
            q.remove(step)
            if not q and not self.retain:
                self._drop(int(t))

    def clear(self) -> None:
        """Drop every cached feature (and the store's)."""
        self.store.clear()
