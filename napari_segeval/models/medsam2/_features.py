"""MedSAM2's image-encoder features of a frame stack, shared by every walk of a case.

A frame's ``backbone_fpn`` levels (position encodings kept once), prepared on each read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from napari_segeval.models._frame_cache import DEFAULT_CACHE_MB, FrameCache, FrameStore

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: The store that keeps a case's features between calls (:class:`FrameStore`).
FeatureStore = FrameStore


class FrameFeatures(FrameCache):
    """SAM2 encoder features of ``frames``, each frame encoded in its fixed block."""

    def __init__(
        self,
        network: Any,
        frames: Any,
        to_input: Callable[[Any], torch.Tensor],
        block: int,
        budget_bytes: float | None,
        reads: list[list[int]],
        store: FrameStore | None = None,
    ) -> None:
        self.network = network
        self.frames = frames
        self.to_input = to_input
        self._pos: list | None = store.extra.get("pos") if store is not None else None
        super().__init__(self._encode, int(frames.shape[0]), block, budget_bytes, reads, store)

    def _encode(self, a: int, b: int) -> list[list]:
        out = self.network.forward_image(self.to_input(self.frames[a:b]))
        if self._pos is None:  # sine position encodings depend on the shape only
            self._pos = [p[:1] for p in out["vision_pos_enc"]]
            if self.store is not None:
                self.store.extra["pos"] = self._pos
        return [[f[i : i + 1] for f in out["backbone_fpn"]] for i in range(b - a)]

    def __contains__(self, t: int) -> bool:
        return int(t) in self._kept

    def read(self, t: int) -> tuple[list, list, list]:
        """Flattened ``(vision_feats, vision_pos_embeds, feat_sizes)`` of frame ``t`` (one read)."""
        fpn = super().get(t)
        backbone_out = {"backbone_fpn": list(fpn), "vision_pos_enc": list(self._pos or [])}
        _, feats, pos, sizes = self.network._prepare_backbone_features(backbone_out)
        return feats, pos, sizes


__all__ = ["DEFAULT_CACHE_MB", "FeatureStore", "FrameFeatures"]
