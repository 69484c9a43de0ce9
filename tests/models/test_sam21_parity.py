"""SAM2.1 (tiny, small, base-plus, large) against Meta's SAM2VideoPredictor.

Random initialisation of each real architecture, built from Meta's own config in the
``sam2`` package; our loop and the reference predictor get the same weights, the
same frames and the same box, and must give identical masks forward and backward.
Tiny, loaded from a checkpoint as the product loads it, runs in the full suite (``slow``:
not in ``scripts/test.sh --fast``) at :data:`SMALL` px (``image_size=`` of
:func:`load_sam2`: the weights do not depend on the input size, where a frame costs a
64th of a 1024 px one); the production geometry (1024 px: tiny from a checkpoint and the
three larger sizes) is ``heavy`` (minutes and GBs on a CPU: ``scripts/test.sh --heavy``).
MedSAM2's 512 px parity (tests/models/test_medsam2_parity.py) pins the production
geometry of the same loop in the full suite.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sam2", reason="Meta's sam2 package (extra 'medsam2') is not installed")
pytest.importorskip("hydra", reason="hydra-core (extra 'medsam2') is not installed")

from napari_segeval._errors import ReadError
from napari_segeval.models.medsam2 import MedSAM2Model, load_sam2
from napari_segeval.models.medsam2._build import ARCHITECTURES, build_network
from napari_segeval.models.medsam2._loop import connected_components
from napari_segeval.models.walk import Walk
from napari_segeval.prompts.box import Box

N, H, W, KEY = 3, 40, 48, 1
BOX = Box(10, 12, 30, 36, index=KEY)
#: Input size of the full suite's parity run (SAM2.1's own is 1024 px).
SMALL = 128


def _volume() -> np.ndarray:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[:H, :W]
    return np.stack(
        [
            np.where((yy - 20) ** 2 + (xx - 24 - z) ** 2 < 90, 80.0, -100.0)
            + rng.normal(0, 20, (H, W))
            for z in range(N)
        ]
    )


def _reference(pred, images, tmp_path, monkeypatch):
    """Meta's predictor ``pred`` on ``images``: forward and reverse from the key frame's box."""
    from PIL import Image
    from sam2.utils import misc

    monkeypatch.setattr(misc, "get_connected_components", connected_components)
    folder = tmp_path / "jpg"  # the predictor reads a JPEG folder; its frames are replaced
    folder.mkdir(exist_ok=True)
    for i in range(N):
        Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(folder / f"{i:05d}.jpg")
    inference = pred.init_state(video_path=str(folder))
    inference["images"] = images
    inference["cached_features"] = {}
    out, key_features = {}, {}
    for reverse in (False, True):
        pred.reset_state(inference)
        # the predictor's own cache of the key frame, as it made it in the first pass (the
        # same image): the second pass does not run the 1024 px encoder on it again
        inference["cached_features"].update(key_features)
        pred.add_new_points_or_box(
            inference, frame_idx=KEY, obj_id=1, box=[BOX.x0, BOX.y0, BOX.x1 - 1, BOX.y1 - 1]
        )
        key_features = dict(inference["cached_features"])
        rows = {
            t: m[0, 0].clone() for t, _, m in pred.propagate_in_video(inference, reverse=reverse)
        }
        out[reverse] = torch.stack([rows[t] for t in sorted(rows, reverse=reverse)])
    return out


def _check(model, pred, tmp_path, monkeypatch, size=1024):
    """Our ``model`` against Meta's predictor ``pred`` holding the same weights."""
    frames = model.preprocess(_volume(), "CT", "abdomen")
    images = model.model_input(frames)
    assert tuple(images.shape[-2:]) == (size, size)  # 1024: SAM2.1's own input size
    ref = _reference(pred, images, tmp_path, monkeypatch)
    # both walks in one call, each frame encoded once (the case pipeline's way; a single
    # walk equals its part of a shared call: test_medsam2_sharing.py)
    fwd, bwd = model.walk_logits(frames, [Walk(KEY, BOX, "forward"), Walk(KEY, BOX, "backward")])
    assert fwd.shape == (N - KEY, H, W) and bwd.shape == (KEY + 1, H, W)
    for ours, theirs in ((fwd, ref[False]), (bwd, ref[True])):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)
        assert torch.equal(ours > 0, theirs > 0)
    masks = torch.cat([fwd, bwd]) > 0
    assert 0 < int(masks.sum()) < masks.numel()  # not degenerate


def _tiny_checkpoint(tmp_path, image_size=None):
    """Meta's predictor for SAM2.1-tiny (seed 0) and its weights saved as a checkpoint."""
    torch.manual_seed(0)
    pred = build_network(predictor=True, arch="sam2.1-tiny", image_size=image_size)
    ckpt = tmp_path / "sam2.1_hiera_tiny.pt"
    torch.save({"model": pred.state_dict()}, ckpt)
    return pred, ckpt


@pytest.mark.slow
@pytest.mark.medsam2
def test_tiny_loaded_from_a_checkpoint_equals_the_reference(tmp_path, monkeypatch):
    pred, ckpt = _tiny_checkpoint(tmp_path, image_size=SMALL)
    model = load_sam2("sam2.1-tiny", ckpt, device="cpu", image_size=SMALL)
    assert model.name == "sam2.1-tiny" and model.image_size == SMALL
    assert model.network.sam_prompt_encoder.image_embedding_size == (SMALL // 16, SMALL // 16)
    _check(model, pred, tmp_path, monkeypatch, size=SMALL)


@pytest.mark.heavy
@pytest.mark.medsam2
def test_tiny_loaded_from_a_checkpoint_equals_the_reference_at_1024_px(tmp_path, monkeypatch):
    """The production geometry: the checkpoint loaded as the product loads it."""
    pred, ckpt = _tiny_checkpoint(tmp_path)
    model = load_sam2("sam2.1-tiny", ckpt, device="cpu")
    assert model.name == "sam2.1-tiny" and model.image_size == 1024
    _check(model, pred, tmp_path, monkeypatch)


@pytest.mark.parametrize(
    "arch",
    [
        pytest.param("sam2.1-small", marks=[pytest.mark.heavy, pytest.mark.medsam2]),
        pytest.param("sam2.1-base-plus", marks=[pytest.mark.heavy, pytest.mark.medsam2]),
        pytest.param("sam2.1-large", marks=[pytest.mark.heavy, pytest.mark.medsam2]),
    ],
)
def test_larger_sizes_equal_the_reference(arch, tmp_path, monkeypatch):
    torch.manual_seed(0)
    net = build_network(arch=arch)
    model = MedSAM2Model(net, device="cpu", name=arch)
    pred = build_network(predictor=True, arch=arch)
    pred.load_state_dict(net.state_dict(), strict=True)
    _check(model, pred, tmp_path, monkeypatch)


def _trunk_only(arch: str) -> dict:
    """What :func:`identify` reads of ``arch``'s weights (no 900 MB network needed)."""
    dim, blocks = ARCHITECTURES[arch].trunk
    return {
        "image_encoder.trunk.patch_embed.proj.weight": torch.zeros(dim, 3, 7, 7),
        f"image_encoder.trunk.blocks.{blocks - 1}.norm1.weight": torch.zeros(1),
    }


@pytest.mark.parametrize(
    "given, target, use",
    [
        ("sam2.1-large", "sam2.1-tiny", "sam2.1-large"),
        ("medsam2", "sam2.1-small", "medsam2 or sam2.1-tiny"),
        ("sam2.1-base-plus", "medsam2", "sam2.1-base-plus"),
    ],
)
def test_weights_of_another_size_are_named_in_one_line(given, target, use, tmp_path):
    ckpt = tmp_path / "w.pt"
    torch.save({"model": _trunk_only(given)}, ckpt)
    with pytest.raises(ReadError) as info:
        load_sam2(target, ckpt)
    text = str(info.value)
    assert text.startswith(f"{ckpt}: this ") and "\n" not in text
    assert f"not {ARCHITECTURES[target].label} weights: use --model {use}" in text
