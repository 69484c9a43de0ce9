"""Our MedSAM2 loop against Meta's SAM2VideoPredictor on the same random weights.

Random init of the real SAM2.1 Hiera-tiny 512 architecture (from our config), saved
as ``{"model": state_dict}``; both pipelines get the same 512 px frames and box.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sam2", reason="Meta's sam2 package (extra 'medsam2') is not installed")
pytest.importorskip("hydra", reason="hydra-core (extra 'medsam2') is not installed")

from napari_segeval.models.medsam2 import load_medsam2
from napari_segeval.models.medsam2._build import build_network, load_network
from napari_segeval.models.medsam2._loop import connected_components
from napari_segeval.prompts.box import Box

N, H, W, KEY = 5, 48, 64, 2
BOX = Box(14, 18, 34, 46, index=KEY)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from PIL import Image

    tmp = tmp_path_factory.mktemp("medsam2")
    torch.manual_seed(0)
    net = build_network()
    ckpt = tmp / "MedSAM2_random.pt"
    torch.save({"model": net.state_dict()}, ckpt)
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[:H, :W]
    vol = np.stack(
        [
            np.where((yy - 24) ** 2 + (xx - 32 - z) ** 2 < 120, 80.0, -100.0)
            + rng.normal(0, 20, (H, W))
            for z in range(N)
        ]
    )
    # the reference reads a JPEG folder; its frames are then replaced by our tensor
    (tmp / "jpg").mkdir()
    for i in range(N):
        Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(tmp / "jpg" / f"{i:05d}.jpg")
    model = load_medsam2(ckpt, device="cpu")
    frames = model.preprocess(vol, "CT", "abdomen")
    return tmp, ckpt, model, frames


def _reference(tmp, ckpt, images, monkeypatch):
    from sam2.utils import misc

    # the reference fills holes with an optional CUDA kernel; give it the CPU equivalent
    monkeypatch.setattr(misc, "get_connected_components", connected_components)
    folder = tmp / "jpg"
    pred = load_network(ckpt, predictor=True)
    state = pred.init_state(video_path=str(folder))
    state["images"] = images
    state["cached_features"] = {}
    xyxy = [BOX.x0, BOX.y0, BOX.x1 - 1, BOX.y1 - 1]
    out = {}
    for reverse in (False, True):
        pred.reset_state(state)
        pred.add_new_points_or_box(state, frame_idx=KEY, obj_id=1, box=xyxy)
        logits = {t: m[0, 0].clone() for t, _, m in pred.propagate_in_video(state, reverse=reverse)}
        order = sorted(logits, reverse=reverse)
        out[reverse] = torch.stack([logits[t] for t in order])
    return out


def test_masks_equal_reference_forward_and_backward(setup, monkeypatch):
    tmp, ckpt, model, frames = setup
    images = model.model_input(frames)
    ref = _reference(tmp, ckpt, images, monkeypatch)
    fwd = model.propagate_logits(frames, KEY, BOX, "forward")
    bwd = model.propagate_logits(frames, KEY, BOX, "backward")
    assert fwd.shape == (N - KEY, H, W) and bwd.shape == (KEY + 1, H, W)
    for ours, theirs in ((fwd, ref[False]), (bwd, ref[True])):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
        assert torch.equal(ours > 0, theirs > 0)
    masks = torch.cat([fwd, bwd]) > 0
    assert 0 < int(masks.sum()) < masks.numel()  # not degenerate
    probs = model.propagate(frames, KEY, BOX, "forward")
    torch.testing.assert_close(probs, torch.sigmoid(fwd))


def test_gradient_flows_to_frames(setup):
    _, _, model, frames = setup
    x = frames[:3].clone().requires_grad_(True)
    probs = model.propagate(x, 1, Box(14, 18, 34, 46, index=1), "forward", grad=True)
    probs.sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0


def test_mask_prompt_equals_reference_add_new_mask(setup, monkeypatch):
    from sam2.utils import misc

    tmp, ckpt, model, frames = setup
    monkeypatch.setattr(misc, "get_connected_components", connected_components)
    sub = frames[KEY:].clone()
    prior = BOX.to_mask((H, W))
    ours = model.propagate_logits(sub, 0, BOX, "forward", init_mask=prior)
    pred = load_network(ckpt, predictor=True)
    folder = tmp / "jpg"
    state = pred.init_state(video_path=str(folder))
    state["images"] = model.model_input(sub)
    state["num_frames"] = sub.shape[0]
    state["cached_features"] = {}
    pred.add_new_mask(state, frame_idx=0, obj_id=1, mask=prior)
    ref = torch.stack([m[0, 0] for _, _, m in pred.propagate_in_video(state)])
    torch.testing.assert_close(ours, ref, rtol=1e-4, atol=1e-4)
    assert torch.equal(ours > 0, ref > 0)


def test_fill_holes_equals_reference_post_processing(monkeypatch):
    from sam2.utils import misc

    from napari_segeval.models.medsam2._loop import fill_holes

    monkeypatch.setattr(misc, "get_connected_components", connected_components)
    logits = torch.from_numpy(np.random.default_rng(3).normal(0.5, 1, (2, 1, 32, 32)))
    ours = fill_holes(logits, 8)
    assert not torch.equal(ours, logits)  # some holes were filled
    assert torch.equal(ours, misc.fill_holes_in_mask_scores(logits, 8))
