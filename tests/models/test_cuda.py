"""The promptable backends on a CUDA GPU (marker ``cuda``; skipped without one).

Run by ``scripts/gpu-check.sh``. Stated tolerances: on CUDA our MedSAM2 loop runs
under bf16 autocast, as MedSAM2's own inference script runs the reference, so
results are compared by mask agreement, not bit for bit:

* our loop vs Meta's ``SAM2VideoPredictor``, both on CUDA under bf16 autocast:
  ``logit > 0`` agrees on at least 99.5 % of the pixels of every walk;
* our loop on CUDA (bf16) vs on the CPU (float32): at least 99 %;
* all structures in one pass (walks batched, the GPU default) vs one pass per
  structure, on CUDA: at least 99.9 %; the built-in model likewise.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from napari_segeval.models.walk import Walk, WalkOptions
from napari_segeval.prompts.box import Box
from napari_segeval.propagation import PropagationOptions, propagate_case

N, H, W, KEY = 6, 48, 64, 2
BOX = Box(14, 18, 34, 46, index=KEY, label=1)
BOX2 = Box(6, 6, 26, 30, index=3, label=2)


def _agreement(a, b) -> float:
    return float(((a > 0) == (b > 0)).float().mean())


@pytest.fixture(scope="module")
def medsam2(tmp_path_factory):
    pytest.importorskip("sam2")
    pytest.importorskip("hydra")
    from PIL import Image

    from napari_segeval.models.medsam2 import load_medsam2
    from napari_segeval.models.medsam2._build import build_network

    tmp = tmp_path_factory.mktemp("medsam2_cuda")
    torch.manual_seed(0)
    ckpt = tmp / "random.pt"
    torch.save({"model": build_network().state_dict()}, ckpt)
    (tmp / "jpg").mkdir()
    for i in range(N):
        Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(tmp / "jpg" / f"{i:05d}.jpg")
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[:H, :W]
    vol = np.stack(
        [
            np.where((yy - 24) ** 2 + (xx - 32 - z) ** 2 < 120, 80.0, -100.0)
            + rng.normal(0, 20, (H, W))
            for z in range(N)
        ]
    )
    gpu = load_medsam2(ckpt, device="cuda")
    return tmp, ckpt, gpu, gpu.preprocess(vol, "CT", "abdomen")


def test_medsam2_on_cuda_matches_the_reference_predictor(medsam2, monkeypatch):
    from sam2.utils import misc

    from napari_segeval.models._device import autocast_context
    from napari_segeval.models.medsam2._build import load_network
    from napari_segeval.models.medsam2._loop import connected_components

    tmp, ckpt, model, frames = medsam2
    monkeypatch.setattr(misc, "get_connected_components", connected_components)
    fwd, bwd = model.walk_logits(frames, [Walk(KEY, BOX, "forward"), Walk(KEY, BOX, "backward")])
    assert fwd.device.type == "cuda"
    pred = load_network(ckpt, predictor=True).to("cuda")
    with torch.inference_mode(), autocast_context(torch.device("cuda")):
        state = pred.init_state(video_path=str(tmp / "jpg"))
        state["images"] = model.model_input(frames)
        state["cached_features"] = {}
        ref = {}
        for reverse in (False, True):
            pred.reset_state(state)
            pred.add_new_points_or_box(
                state, frame_idx=KEY, obj_id=1, box=[BOX.x0, BOX.y0, BOX.x1 - 1, BOX.y1 - 1]
            )
            rows = {
                t: m[0, 0].float() for t, _, m in pred.propagate_in_video(state, reverse=reverse)
            }
            ref[reverse] = torch.stack([rows[t] for t in sorted(rows, reverse=reverse)])
    assert _agreement(fwd, ref[False]) >= 0.995 and _agreement(bwd, ref[True]) >= 0.995
    assert 0 < int((fwd > 0).sum()) < fwd.numel()


def test_medsam2_cuda_agrees_with_cpu(medsam2):
    from napari_segeval.models.medsam2 import load_medsam2

    _, ckpt, model, frames = medsam2
    cpu = load_medsam2(ckpt, device="cpu")
    gpu_logits = model.propagate_logits(frames, KEY, BOX, "forward")
    cpu_logits = cpu.propagate_logits(frames, KEY, BOX, "forward")
    assert _agreement(gpu_logits.cpu(), cpu_logits) >= 0.99


def test_medsam2_shared_batched_walks_on_cuda(medsam2):
    _, _, model, frames = medsam2
    assert model._batch()  # batched walks are the default on a GPU
    shared = propagate_case(model, frames, [BOX, BOX2], PropagationOptions(stop_when_empty=False))
    assert model.last_run["encoded_frames"] == N
    separate = propagate_case(
        model, frames, [BOX, BOX2], PropagationOptions(stop_when_empty=False, share=False)
    )
    for lab in (1, 2):
        agree = np.mean((shared.probabilities[lab] > 0.5) == (separate.probabilities[lab] > 0.5))
        assert agree >= 0.999
    torch.cuda.synchronize()


def test_medsam2_gradient_on_cuda(medsam2):
    _, _, model, frames = medsam2
    x = frames[:3].clone().to("cuda").requires_grad_(True)
    probs = model.propagate(
        x, 1, Box(14, 18, 34, 46, index=1), "forward", options=WalkOptions(grad=True)
    )
    probs.sum().backward()
    assert torch.isfinite(x.grad).all() and float(x.grad.abs().sum()) > 0


def test_builtin_shared_batched_on_cuda():
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel
    from napari_segeval.phantoms.ct import make_ct_case
    from napari_segeval.prompts.from_labels import boxes_from_labels

    case = make_ct_case(7, shape=(24, 96, 96), tumour=True)
    boxes = boxes_from_labels(
        case.labels, [lab for lab in range(1, 6) if (case.labels == lab).any()]
    )
    gpu = BuiltinPromptModel(device="cuda")
    frames = gpu.preprocess(case.image, "CT")
    shared = propagate_case(gpu, frames, boxes)
    separate = propagate_case(gpu, frames, boxes, PropagationOptions(share=False))
    assert np.mean(shared.labels == separate.labels) >= 0.999
    cpu = propagate_case(BuiltinPromptModel(device="cpu"), frames, boxes)
    assert np.mean(shared.labels == cpu.labels) >= 0.99
