"""The shared, bounded image-feature cache of the MedSAM2 loop, with a counting stand-in encoder."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from napari_segeval.models.medsam2._walks import FrameFeatures
from napari_segeval.models.walk import Walk
from napari_segeval.prompts.box import Box

FRAME_BYTES = 4 * (2 * 4 * 4 + 2 * 2 * 2)  # the two float32 levels below


class FakeNet:
    """``forward_image`` that records its batches; features depend on the frame only."""

    def __init__(self):
        self.batches = []

    def forward_image(self, x):
        self.batches.append(x[:, 0, 0, 0].long().tolist())
        v = x[:, :1, :1, :1]
        return {
            "backbone_fpn": [v.expand(-1, 2, 4, 4) * 1.0, v.expand(-1, 2, 2, 2) * 2.0],
            "vision_pos_enc": [torch.zeros(x.shape[0], 2, 4, 4), torch.zeros(x.shape[0], 2, 2, 2)],
        }

    def _prepare_backbone_features(self, out):
        return out, out["backbone_fpn"], out["vision_pos_enc"], [(4, 4), (2, 2)]


def _frames(n):
    return torch.arange(n, dtype=torch.float32)[:, None, None, None].expand(n, 3, 1, 1)


def _reads(n, walks):
    seqs = [w.frames(n).tolist() for w in walks]  # the frames each step of the walks reads
    return [[s[j] for s in seqs if j < len(s)] for j in range(max(map(len, seqs), default=0))]


def _run(n, walks, block, budget):
    net = FakeNet()
    reads = _reads(n, walks)
    feats = FrameFeatures(net, _frames(n), lambda x: x, block, budget, reads)
    seen = []
    for step in reads:
        for t in step:
            value = feats.read(t)[0][0]
            assert torch.all(value == float(t))  # the right frame's features
            seen.append(t)
        assert feats.cached_bytes <= (budget if budget is not None else float("inf"))
    return net, feats


WALKS = [Walk(k, Box(0, 0, 1, 1), o) for k in (3, 6, 9) for o in ("forward", "backward")]


def test_each_frame_encoded_once_and_dropped_after_its_last_read():
    net, feats = _run(12, WALKS, 4, None)
    encoded = sorted(t for b in net.batches for t in b)
    assert encoded == list(range(12)) and feats.encoded == 12
    assert net.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]  # fixed blocks
    assert feats.cached_bytes == 0  # nothing is kept once every read is done


def test_a_tiny_budget_re_encodes_but_never_holds_more():
    for budget in (0, FRAME_BYTES, 3 * FRAME_BYTES):
        _net, feats = _run(12, WALKS, 1, budget)
        assert feats.peak_bytes <= budget
        assert feats.encoded > 12  # frames were dropped and encoded again
    # a larger budget never costs more encodings (furthest-next-read eviction)
    counts = [_run(12, WALKS, 1, b * FRAME_BYTES)[1].encoded for b in (0, 1, 2, 4, 8, 16)]
    assert counts == sorted(counts, reverse=True) and counts[-1] == 12


def test_forget_releases_a_frame_no_walk_will_read():
    reads = [[0, 0], [1]]
    feats = FrameFeatures(FakeNet(), _frames(4), lambda x: x, 4, None, reads)
    feats.read(0)
    assert 1 in feats.store.features
    feats.forget(1, 1)
    assert 1 not in feats.store.features and 0 in feats.store.features  # 0 is read once more
    feats.read(0)
    assert feats.cached_bytes == 0
