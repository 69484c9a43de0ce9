"""Several structures in one MedSAM2 pass: identical results, each frame encoded once.

Random SAM2.1 Hiera-tiny weights (as the parity test) at the parity test's small input
size (:data:`SMALL` px, ``image_size=``: a sixteenth of a 512 px frame's cost; sharing,
caching and batching do not depend on the size); the parity test checks that a walk
equals Meta's SAM2VideoPredictor, these tests that sharing changes nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sam2", reason="Meta's sam2 package (extra 'medsam2') is not installed")
pytest.importorskip("hydra", reason="hydra-core (extra 'medsam2') is not installed")

from napari_segeval.models.medsam2 import MedSAM2Model
from napari_segeval.models.medsam2._build import build_network
from napari_segeval.models.walk import Walk
from napari_segeval.prompts.box import Box
from napari_segeval.propagation import PropagationOptions, propagate_case

pytestmark = [pytest.mark.slow, pytest.mark.medsam2]

N, H, W = 5, 40, 48
SMALL = 128  # input size (px)
BOXES = [Box(10, 12, 30, 36, index=2, label=1), Box(4, 4, 20, 22, index=1, label=3)]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    # blocks of 2 frames: a frame's block is read by several walks, in either order
    return MedSAM2Model(build_network(image_size=SMALL), device="cpu", encode_batch=2)


@pytest.fixture(scope="module")
def frames(model):
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[:H, :W]
    vol = np.stack(
        [
            np.where((yy - 20) ** 2 + (xx - 24 - z) ** 2 < 90, 80.0, -100.0)
            + rng.normal(0, 20, (H, W))
            for z in range(N)
        ]
    )
    return model.preprocess(vol, "CT", "abdomen")


@pytest.fixture(scope="module")
def volume_runs(model, frames):
    shared = propagate_case(model, frames, BOXES, PropagationOptions(stop_when_empty=False))
    encoded = model.last_run["encoded_frames"]
    separate = propagate_case(
        model, frames, BOXES, PropagationOptions(stop_when_empty=False, share=False)
    )
    return shared, separate, encoded


def _same(a, b):
    assert sorted(a.probabilities) == sorted(b.probabilities)
    for lab in a.probabilities:
        assert np.array_equal(a.probabilities[lab], b.probabilities[lab]), lab
    assert np.array_equal(a.labels, b.labels)


def test_structures_share_frames_with_identical_results(volume_runs):
    shared, separate, encoded = volume_runs
    _same(shared, separate)
    assert encoded == N  # every frame once, for both structures and both directions
    fg = [int((p > 0.5).sum()) for p in shared.probabilities.values()]
    assert all(0 < f < N * H * W for f in fg)  # not degenerate


def test_one_structure_both_directions_equal_separate_calls(model, frames):
    box = BOXES[0]
    fwd, bwd = model.propagate_walks(frames, [Walk(2, box, "forward"), Walk(2, box, "backward")])
    assert model.last_run["encoded_frames"] == N
    assert torch.equal(fwd, model.propagate(frames, 2, box, "forward"))
    assert torch.equal(bwd, model.propagate(frames, 2, box, "backward"))


def test_video_mode_shared_equals_separate(model, frames):
    progress = []
    shared = propagate_case(
        model,
        frames,
        BOXES,
        PropagationOptions(mode="video"),
        progress=lambda d, t: progress.append((d, t)),
    )
    _same(
        shared, propagate_case(model, frames, BOXES, PropagationOptions(mode="video", share=False))
    )
    total = (N - 2) + (N - 1)
    assert progress[-1] == (total, total)
    assert [d for d, _ in progress] == sorted(d for d, _ in progress)


def test_a_tiny_cache_re_encodes_with_identical_results(model, frames, volume_runs):
    frame_mib = 4.2e6 / 2**20 * (SMALL / 512) ** 2  # one frame's features (float32)
    tiny = propagate_case(
        model, frames, BOXES, PropagationOptions(stop_when_empty=False, cache_mb=frame_mib)
    )
    run = model.last_run
    assert run["peak_cache_bytes"] <= run["cache_budget_bytes"]
    assert run["encoded_frames"] > N  # the bound was binding
    _same(tiny, volume_runs[0])


def test_batched_walks_same_masks(model, frames, volume_runs):
    model.batch_walks = True  # the GPU default; on a CPU the last bits may differ
    try:
        batched = propagate_case(model, frames, BOXES, PropagationOptions(stop_when_empty=False))
    finally:
        model.batch_walks = None
    for lab, p in volume_runs[0].probabilities.items():
        np.testing.assert_allclose(batched.probabilities[lab], p, rtol=0, atol=1e-5)
        assert np.array_equal(batched.probabilities[lab] > 0.5, p > 0.5)
    assert np.array_equal(batched.labels, volume_runs[0].labels)


@pytest.mark.parametrize("decision", ["probability", "logit"])
def test_slices_are_reported_as_computed_without_changing_the_result(model, frames, decision):
    seen, progress = [], []
    kw = PropagationOptions(stop_when_empty=False, decision=decision)
    watched = propagate_case(
        model,
        frames,
        BOXES,
        kw,
        progress=lambda d, t: progress.append(d),
        on_slice=lambda lab, i, m: seen.append((lab, i, len(progress))),
    )
    _same(watched, propagate_case(model, frames, BOXES, kw))
    # every structure's slices, the key slice first, each heard while the walks still ran
    for box in BOXES:
        mine = [i for lab, i, _ in seen if lab == box.label]
        assert mine[0] == box.index and sorted(set(mine)) == list(range(N))
    total = max(progress)
    assert any(done < total for _, _, done in seen)


def test_prompt_sets_shared_separate_and_batched_agree(model, frames):
    """Several conditioning frames per structure; walks of one layout share a batch."""
    from napari_segeval.prompts.prompt_set import Point, PromptSet

    sets = {
        1: PromptSet.of([Box(10, 12, 30, 36, index=1), Box(10, 12, 30, 36, index=3)]),
        3: PromptSet.of(
            [Box(4, 4, 20, 22, index=2), Point(12, 12, index=3, positive=False)], label=3
        ),
        4: PromptSet.of([Box(6, 6, 22, 24, index=1), Box(6, 6, 22, 24, index=3)], label=4),
    }
    opts = PropagationOptions(stop_when_empty=False)
    shared = propagate_case(model, frames, sets, opts)
    assert model.last_run["encoded_frames"] == N
    _same(shared, propagate_case(model, frames, sets, opts.replace(share=False)))
    model.batch_walks = True
    try:
        batched = propagate_case(model, frames, sets, opts)
    finally:
        model.batch_walks = None
    for lab, p in shared.probabilities.items():
        np.testing.assert_allclose(batched.probabilities[lab], p, rtol=0, atol=1e-5)
    assert np.array_equal(batched.labels, shared.labels)


def test_each_visited_slice_has_the_decoders_object_score(volume_runs):
    """The trace holds SAM2's object score per slice (a probability), shared or not, and
    the risk reads it as the ``object`` signal."""
    from napari_segeval.uncertainty.risk import Signal, structure_risk

    shared, separate, _ = volume_runs
    for lab in shared.structures:
        p, q = shared.structures[lab].trace.presence, separate.structures[lab].trace.presence
        assert sorted(p) == list(range(N)) and p == pytest.approx(q)
        assert all(0.0 <= v <= 1.0 for v in p.values())
    s = shared.structures[1]
    masks = np.zeros((N, H, W), bool)
    masks[2, 12:30, 14:36] = True
    risk = structure_risk(1, masks, np.asarray(masks, np.float32), trace=s.trace)
    assert risk.slices[0].signals[Signal.OBJECT] == pytest.approx(1.0 - s.trace.presence[2])


def test_each_visited_slice_has_the_iou_heads_estimate(volume_runs):
    """The trace holds the IoU head's estimate of the kept mask per slice (a probability,
    the same shared or not), and the risk reads it as the ``iou`` signal."""
    from napari_segeval.uncertainty.risk import Signal, structure_risk

    shared, separate, _ = volume_runs
    for lab in shared.structures:
        q, r = shared.structures[lab].trace.quality, separate.structures[lab].trace.quality
        assert sorted(q) == list(range(N)) and q == pytest.approx(r)
        assert all(0.0 <= v <= 1.0 for v in q.values())
    s = shared.structures[1]
    masks = np.zeros((N, H, W), bool)
    masks[2, 12:30, 14:36] = True
    risk = structure_risk(1, masks, np.asarray(masks, np.float32), trace=s.trace)
    assert risk.slices[0].signals[Signal.IOU] == pytest.approx(1.0 - s.trace.quality[2])


def test_the_iou_probe_hears_the_kept_masks_estimate():
    """With multimask output SAM2 keeps the mask of highest predicted IoU: the probe
    gives that estimate, per object; a call without the decoder gives None."""
    import torch

    from napari_segeval.models.medsam2._loop import IouProbe

    class Decoder(torch.nn.Module):
        def forward(self, x):
            return x, torch.tensor([[0.2, 0.9, 0.4], [0.7, 0.1, 0.3]]), None, None

    net = torch.nn.Module()
    net.sam_mask_decoder = Decoder()
    with IouProbe(net) as probe:
        assert probe.take() is None
        net.sam_mask_decoder(torch.zeros(1))
        assert probe.take() == pytest.approx([0.9, 0.7])
        assert probe.take() is None
    net.sam_mask_decoder(torch.zeros(1))  # the hook is gone
    assert not net.sam_mask_decoder._forward_hooks
