"""The ``medsam2`` preset's pipeline against MedSAM2's own steps, end to end.

MedSAM2's 3D CT script (``medsam2_infer_3D_CT.py``) re-implemented independently here:
clip to the window, min-max of the clipped volume, uint8, RGB, Pillow resize to 512,
``/ 255``, ImageNet mean/std; then Meta's ``SAM2VideoPredictor`` (random Hiera-tiny
weights, the session's ``medsam2_checkpoint``) forward and backward from the key slice's
box, ``logit > 0``, union, and scikit-image's largest (26-connected) component. Our side:
``preprocess`` with ``ct_mapping="minmax"``, ``resize="pillow"``, and ``propagate_case``
with the preset's options. The input tensor is compared at MedSAM2's 512 px; the networks
run the same weights at :data:`SMALL` px (``image_size=``, a sixteenth of the cost), the
script's resize going to that size: test_medsam2_parity.py pins the 512 px network.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sam2", reason="Meta's sam2 package (extra 'medsam2') is not installed")
pytest.importorskip("hydra", reason="hydra-core (extra 'medsam2') is not installed")

from napari_segeval.models.medsam2 import MedSAM2Model, load_medsam2
from napari_segeval.models.medsam2._build import load_network
from napari_segeval.models.medsam2._loop import connected_components
from napari_segeval.prompts.box import Box
from napari_segeval.propagation import PropagationOptions, propagate_case

pytestmark = [pytest.mark.slow, pytest.mark.medsam2]

N, H, W, KEY = 5, 48, 64, 2
BOX = Box(12, 16, 36, 48, index=KEY, label=1)
LUNG = (-1350.0, 150.0)  # the volume stays below 150 HU: min-max differs from the edges
SMALL = 128  # the networks' input size here (px)


def _theirs_frames(hu: np.ndarray, size: int = 512) -> torch.Tensor:
    from PIL import Image

    pre = np.clip(hu, *LUNG)
    pre = np.uint8((pre - pre.min()) / (pre.max() - pre.min()) * 255.0)
    out = np.zeros((pre.shape[0], 3, size, size))
    for i in range(pre.shape[0]):
        out[i] = np.array(Image.fromarray(pre[i]).convert("RGB").resize((size, size))).transpose(
            2, 0, 1
        )
    out = torch.from_numpy(out / 255.0).float()
    mean = torch.tensor((0.485, 0.456, 0.406))[:, None, None]
    std = torch.tensor((0.229, 0.224, 0.225))[:, None, None]
    return (out - mean) / std


@pytest.fixture(scope="module")
def setup(tmp_path_factory, medsam2_checkpoint):
    from PIL import Image

    tmp = tmp_path_factory.mktemp("medsam2_e2e")
    ckpt = medsam2_checkpoint
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[:H, :W]
    hu = np.stack(
        [
            np.where((yy - 24) ** 2 + (xx - 32 - z) ** 2 < 130, 60.0, -700.0)
            + rng.normal(0, 30, (H, W))
            for z in range(N)
        ]
    ).round()
    (tmp / "jpg").mkdir()
    for i in range(N):
        Image.fromarray(np.zeros((H, W, 3), np.uint8)).save(tmp / "jpg" / f"{i:05d}.jpg")
    return tmp, ckpt, hu


@pytest.fixture(scope="module")
def small(setup) -> MedSAM2Model:
    """Our model with the checkpoint's weights at :data:`SMALL` px, MedSAM2's resize."""
    return MedSAM2Model(load_network(setup[1], image_size=SMALL), device="cpu", resize="pillow")


def _their_masks(tmp, ckpt, images, monkeypatch) -> np.ndarray:
    from sam2.utils import misc
    from skimage import measure

    monkeypatch.setattr(misc, "get_connected_components", connected_components)
    pred = load_network(ckpt, predictor=True, image_size=SMALL)
    state = pred.init_state(video_path=str(tmp / "jpg"))
    state["images"], state["cached_features"] = images, {}
    segs = np.zeros((N, H, W), np.uint8)
    for reverse in (False, True):
        pred.reset_state(state)
        pred.add_new_points_or_box(
            state, frame_idx=KEY, obj_id=1, box=[BOX.x0, BOX.y0, BOX.x1 - 1, BOX.y1 - 1]
        )
        for t, _, logits in pred.propagate_in_video(state, reverse=reverse):
            segs[t, (logits[0] > 0.0).cpu().numpy()[0]] = 1
    labels = measure.label(segs)
    return labels == np.argmax(np.bincount(labels.flat)[1:]) + 1


def test_preset_pipeline_equals_medsam2_script(setup, small, monkeypatch):
    tmp, ckpt, hu = setup
    at512 = load_medsam2(ckpt, device="cpu").with_options(resize="pillow")
    frames = at512.preprocess(hu, "CT", "lung", ct_mapping="minmax")
    torch.testing.assert_close(at512.model_input(frames), _theirs_frames(hu), atol=1e-5, rtol=0)
    model = small
    theirs_in = _theirs_frames(hu, SMALL)
    torch.testing.assert_close(model.model_input(frames), theirs_in, atol=1e-5, rtol=0)
    res = propagate_case(
        model,
        frames,
        [BOX],
        PropagationOptions(decision="logit", connectivity=26, stop_when_empty=False),
    )
    theirs = _their_masks(tmp, ckpt, theirs_in, monkeypatch)
    ours = res.masks[1]
    assert 0 < theirs.sum() < theirs.size
    dice = 2 * (ours & theirs).sum() / (ours.sum() + theirs.sum())
    assert dice == 1.0
    assert np.array_equal(res.labels > 0, ours)


def test_preset_options_same_masks_with_and_without_sharing(setup, small):
    hu, model = setup[2], small
    frames = model.preprocess(hu, "CT", "lung", ct_mapping="minmax")
    boxes = [BOX, Box(4, 4, 20, 20, index=1, label=2)]
    kw = PropagationOptions(decision="logit", connectivity=26, stop_when_empty=False)
    a = propagate_case(model, frames, boxes, kw.replace(share=True))
    b = propagate_case(model, frames, boxes, kw.replace(share=False))
    for lab in (1, 2):
        assert np.array_equal(a.masks[lab], b.masks[lab])
        assert np.array_equal(a.probabilities[lab], b.probabilities[lab])
    assert np.array_equal(a.labels, b.labels)
