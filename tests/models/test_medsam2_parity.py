"""Our MedSAM2 loop against Meta's SAM2VideoPredictor on the same random weights.

Random init of the real SAM2.1 Hiera-tiny architecture (from our config, seed 0: the
session's ``medsam2_checkpoint``), saved as ``{"model": state_dict}``; both pipelines
get the same frames and prompts. One test runs the production geometry (512 px, the
checkpoint loaded as the product loads it); the others run the same weights at
:data:`SMALL` px (``image_size=`` of :func:`load_network`: the weights do not depend on
the input size, the RoPE feature sizes and the prompt encoder's embedding size follow),
where a frame costs a sixteenth: what they pin (prompt sequences, memory over five
frames, mask prompts, gradients, the feature cache) does not depend on the size.
The reference reads a folder of blank JPEG frames (for their count and size) whose
images are then replaced by our model's input tensor.

Several prompts follow the reference sequence (docs/design.md): ``init_state``; every
prompt in order as its own call (``add_new_points_or_box`` with the box alone and
``clear_old_points=True`` for a box; one point per call with
``clear_old_points=False``; ``add_new_mask`` for a mask);
``propagate_in_video(start_frame_idx=first conditioning frame)``; ``reset_state``; the
same prompts again; ``propagate_in_video(start_frame_idx=last conditioning frame,
reverse=True)``; the union.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sam2", reason="Meta's sam2 package (extra 'medsam2') is not installed")
pytest.importorskip("hydra", reason="hydra-core (extra 'medsam2') is not installed")

from napari_segeval.models.medsam2 import MedSAM2Model, load_medsam2
from napari_segeval.models.medsam2._build import build_network, load_network, read_state_dict
from napari_segeval.models.medsam2._loop import connected_components
from napari_segeval.models.walk import Walk, WalkOptions
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet
from napari_segeval.propagation import PropagationOptions, PropagationSession, propagate_case

pytestmark = [pytest.mark.slow, pytest.mark.medsam2]

N, H, W, KEY = 5, 48, 64, 2
BOX = Box(14, 18, 34, 46, index=KEY)
#: Input size of every parity run but the production one (512 px).
SMALL = 128


@pytest.fixture(autouse=True)
def _cpu_fill_holes(monkeypatch):
    """The reference fills holes with an optional CUDA kernel; give it the CPU equivalent."""
    from sam2.utils import misc

    monkeypatch.setattr(misc, "get_connected_components", connected_components)


def _volume() -> np.ndarray:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[:H, :W]
    return np.stack(
        [
            np.where((yy - 24) ** 2 + (xx - 32 - z) ** 2 < 120, 80.0, -100.0)
            + rng.normal(0, 20, (H, W))
            for z in range(N)
        ]
    )


def _jpegs(tmp, n: int):
    """A folder of ``n`` blank JPEG frames: what the reference reads (count and size)."""
    from PIL import Image

    folder = tmp / f"jpg{n}"
    if not folder.is_dir():
        folder.mkdir()
        for i in range(n):
            Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(folder / f"{i:05d}.jpg")
    return folder


@pytest.fixture(scope="module")
def setup(tmp_path_factory, medsam2_checkpoint):
    """Our model at :data:`SMALL` px with the checkpoint's weights, and the frames."""
    tmp = tmp_path_factory.mktemp("medsam2")
    model = MedSAM2Model(load_network(medsam2_checkpoint, image_size=SMALL), device="cpu")
    frames = model.preprocess(_volume(), "CT", "abdomen")
    return tmp, medsam2_checkpoint, model, frames


@pytest.fixture(scope="module")
def reference(setup):
    """Meta's predictor at :data:`SMALL` px, same weights (its state lives in each
    ``init_state``: one predictor serves every test of the module)."""
    return load_network(setup[1], predictor=True, image_size=SMALL)


def _give(pred, state, prompts: PromptSet) -> None:
    """Every prompt in order, each as its own call (the reference sequence)."""
    for p in prompts:
        if isinstance(p, Box):
            pred.add_new_points_or_box(
                state, frame_idx=p.index, obj_id=1, box=[p.x0, p.y0, p.x1 - 1, p.y1 - 1]
            )
        elif isinstance(p, Point):
            pred.add_new_points_or_box(
                state,
                frame_idx=p.index,
                obj_id=1,
                points=[[p.x, p.y]],
                labels=[1 if p.positive else 0],
                clear_old_points=False,
            )
        else:
            pred.add_new_mask(state, frame_idx=p.index, obj_id=1, mask=p.mask)


def _reference_sequence(pred, folder, images, prompts: PromptSet):
    """Forward from the first conditioning frame, reset, backward from the last one."""
    state = pred.init_state(video_path=str(folder))
    state["images"] = images
    state["cached_features"] = {}
    out, given = {}, {}
    for reverse in (False, True):
        pred.reset_state(state)
        # the predictor's own cache of the last prompted frame, as it made it in the first
        # pass (the same image): the second pass does not encode that frame again
        state["cached_features"].update(given)
        _give(pred, state, prompts)
        given = dict(state["cached_features"])
        start = prompts.last_frame if reverse else prompts.first_frame
        logits = {
            t: m[0, 0].clone()
            for t, _, m in pred.propagate_in_video(state, start_frame_idx=start, reverse=reverse)
        }
        out[reverse] = torch.stack([logits[t] for t in sorted(logits, reverse=reverse)])
    return out


def test_masks_equal_reference_forward_and_backward_at_512_px(setup, medsam2_checkpoint):
    """The production geometry: MedSAM2 loaded as the product loads it, 512 px input, a
    box on the middle of three frames, both walks against the reference's two passes."""
    tmp = setup[0]
    model = load_medsam2(medsam2_checkpoint, device="cpu")
    assert model.image_size == 512
    frames = model.preprocess(_volume()[1:4], "CT", "abdomen")  # the key slice in the middle
    images = model.model_input(frames)
    assert tuple(images.shape) == (3, 3, 512, 512)
    box = Box(BOX.x0, BOX.y0, BOX.x1, BOX.y1, index=1)
    pred = load_network(medsam2_checkpoint, predictor=True)
    ref = _reference_sequence(pred, _jpegs(tmp, 3), images, PromptSet.of([box]))
    # both walks in one call: each frame encoded once (the case pipeline's way)
    fwd, bwd = model.walk_logits(frames, [Walk(1, box, "forward"), Walk(1, box, "backward")])
    assert fwd.shape == (2, H, W) and bwd.shape == (2, H, W)
    for ours, theirs in ((fwd, ref[False]), (bwd, ref[True])):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
        assert torch.equal(ours > 0, theirs > 0)
    masks = torch.cat([fwd, bwd]) > 0
    assert 0 < int(masks.sum()) < masks.numel()  # not degenerate


def test_a_network_at_another_input_size_takes_the_same_weights(setup, medsam2_checkpoint):
    """``image_size=``: the same parameters (seed for seed), the geometry follows."""
    small = setup[2].network  # load_network(checkpoint of the 512 px network, image_size=SMALL)
    assert small.image_size == SMALL and small.sam_image_embedding_size == SMALL // 16
    assert small.sam_prompt_encoder.image_embedding_size == (SMALL // 16, SMALL // 16)
    rope = small.memory_attention.layers[0].self_attn.freqs_cis
    assert rope.shape[0] == (SMALL // 16) ** 2
    torch.manual_seed(0)  # the seed of the checkpoint: the same weights at any size
    built = build_network(image_size=SMALL).state_dict()
    state = read_state_dict(medsam2_checkpoint)
    assert built.keys() == state.keys()
    assert all(torch.equal(built[k], state[k]) for k in state)
    with pytest.raises(ValueError, match="multiple of 32"):
        build_network(image_size=100)


def test_gradient_flows_to_frames(setup):
    _, _, model, frames = setup
    x = frames[:3].clone().requires_grad_(True)
    probs = model.propagate(
        x, 1, Box(14, 18, 34, 46, index=1), "forward", options=WalkOptions(grad=True)
    )
    probs.sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0


def test_mask_prompt_equals_reference_add_new_mask(setup, reference):
    tmp, _, model, frames = setup
    sub = frames[KEY:].clone()
    prior = BOX.to_mask((H, W))
    mask = PromptSet.of([MaskPrompt(prior, 0)])
    ours = model.propagate_logits(sub, 0, mask, "forward")
    state = reference.init_state(video_path=str(_jpegs(tmp, sub.shape[0])))
    state["images"] = model.model_input(sub)
    state["cached_features"] = {}
    reference.add_new_mask(state, frame_idx=0, obj_id=1, mask=prior)
    ref = torch.stack([m[0, 0] for _, _, m in reference.propagate_in_video(state)])
    torch.testing.assert_close(ours, ref, rtol=1e-4, atol=1e-4)
    assert torch.equal(ours > 0, ref > 0)
    # the probabilities are the logits' sigmoid
    probs = model.propagate(sub, 0, mask, "forward")
    torch.testing.assert_close(probs, torch.sigmoid(ours))


def test_fill_holes_equals_reference_post_processing():
    from sam2.utils import misc

    from napari_segeval.models.medsam2._loop import fill_holes

    logits = torch.from_numpy(np.random.default_rng(3).normal(0.5, 1, (2, 1, 32, 32)))
    ours = fill_holes(logits, 8)
    assert not torch.equal(ours, logits)  # some holes were filled
    assert torch.equal(ours, misc.fill_holes_in_mask_scores(logits, 8))


SEQUENCES = {
    "a box": PromptSet.of([BOX]),
    "boxes on two slices": PromptSet.of(
        [Box(14, 18, 34, 46, index=1), Box(12, 20, 36, 50, index=3)]
    ),
    "a box then a negative click on another slice": PromptSet.of(
        [Box(14, 18, 34, 46, index=1), Point(24, 40, index=3, positive=False)]
    ),
    "points only": PromptSet.of(
        [
            Point(24, 33, index=1),
            Point(22, 30, index=1),
            Point(30, 20, index=1, positive=False),
            Point(24, 36, index=3),
        ]
    ),
    "a box refined by clicks, and a mask": PromptSet.of(
        [
            Point(10, 10, index=2),
            Box(14, 18, 34, 46, index=2),
            Point(24, 34, index=2),
            Point(16, 20, index=2, positive=False),
            MaskPrompt(Box(16, 22, 32, 44).to_mask((H, W)), index=4),
            Point(20, 30, index=4, positive=False),
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_prompt_sequences_equal_reference(setup, reference, name):
    tmp, _, model, frames = setup
    prompts = SEQUENCES[name]
    ref = _reference_sequence(reference, _jpegs(tmp, N), model.model_input(frames), prompts)
    first, last = prompts.first_frame, prompts.last_frame
    fwd = model.propagate_logits(frames, first, prompts, "forward")
    bwd = model.propagate_logits(frames, last, prompts, "backward")
    assert fwd.shape == (N - first, H, W) and bwd.shape == (last + 1, H, W)
    for ours, theirs in ((fwd, ref[False]), (bwd, ref[True])):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
        assert torch.equal(ours > 0, theirs > 0)
    # the case pipeline: the union of both walks, as the reference's two passes
    res = propagate_case(
        model,
        frames,
        {1: prompts},
        PropagationOptions(decision="logit", keep_largest=False, stop_when_empty=False),
    )
    union = torch.full((N, H, W), float("-inf"))
    union[first:] = ref[False]
    union[: last + 1] = torch.maximum(union[: last + 1], torch.flip(ref[True], dims=(0,)))
    assert np.array_equal(res.masks[1], (union > 0).numpy())
    assert 0 < int(res.masks[1].sum()) < res.masks[1].size  # not degenerate


def test_a_correction_does_not_encode_again(setup):
    """Re-propagating the same frames with an added prompt reuses the cached features."""
    _, _, model, shared = setup
    frames = shared.clone()  # a tensor no other test has propagated
    base = SEQUENCES["boxes on two slices"]
    calls = []
    encode = model.network.forward_image
    model.network.forward_image = lambda img: calls.append(int(img.shape[0])) or encode(img)
    try:
        session = PropagationSession(model, frames)
        session.set_prompts({1: base})
        first = session.propagate()
        encoded = sum(calls)
        corrected = session.add(Point(24, 40, index=2, positive=False))
        again = session.propagate()
        assert encoded == N and sum(calls) == N  # the correction ran no encoder
        assert model.last_run["encoded_frames"] == 0 and model.last_run["reused_frames"] == N
        propagate_case(model, frames, {1: corrected})  # no cache given: encodes anew
        assert sum(calls) == 2 * N
        cache = model.feature_cache()
        propagate_case(model, frames, {1: corrected}, cache=cache)
        fresh = frames.clone()  # another tensor: the cache starts afresh, same result
        same = propagate_case(model, fresh, {1: corrected}, cache=cache)
        assert sum(calls) == 4 * N
    finally:
        model.network.forward_image = encode
    np.testing.assert_array_equal(again.labels, same.labels)
    assert not np.array_equal(first.probabilities[1], again.probabilities[1])
