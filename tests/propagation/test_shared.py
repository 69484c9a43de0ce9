"""Several structures in one pass (``share=True``): the same result as one pass each.

The built-in model on the bundled CT (five structures, volume) and on an echo
phantom (three structures, video); the weight-free threshold backend walks one walk
after the other.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from napari_segeval._cancel import Cancelled
from napari_segeval.models.builtin_prompt import BuiltinPromptModel
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.models.walk import Walk, WalkOptions
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.from_labels import boxes_from_labels
from napari_segeval.propagation import PropagationOptions, propagate_case

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


@pytest.fixture(scope="module")
def model():
    return BuiltinPromptModel(device="cpu")


@pytest.fixture(scope="module")
def ct(model):
    """The bundled CT, every other slice (20 of 40: all five structures, half the walk)."""
    from napari_segeval.io import read_case

    case = read_case(SAMPLES / "ct" / "ct_001.nii.gz", SAMPLES / "ct" / "ct_001_labels.nii.gz")
    image, labels = case.image[::2], case.labels[::2]
    return model.preprocess(image, "CT"), boxes_from_labels(labels, [1, 2, 3, 4, 5])


@pytest.fixture(scope="module")
def echo(model):
    """An echo phantom of 12 frames (three structures)."""
    from napari_segeval.phantoms.echo import make_echo_clip

    clip = make_echo_clip(2001, n_frames=12)
    boxes = boxes_from_labels(clip.labels, [1, 2, 3], mode="video")
    return model.preprocess(clip.image, "US"), boxes


def _same(a, b):
    assert sorted(a.probabilities) == sorted(b.probabilities)
    for lab in a.probabilities:
        assert np.array_equal(a.probabilities[lab], b.probabilities[lab]), lab
    assert np.array_equal(a.labels, b.labels)


@pytest.mark.parametrize("n_structures", [1, 5])
def test_shared_volume_equals_one_pass_per_structure(model, ct, n_structures):
    frames, boxes = ct
    boxes = boxes[:n_structures]
    shared = propagate_case(model, frames, boxes)
    _same(shared, propagate_case(model, frames, boxes, PropagationOptions(share=False)))
    assert all((p > 0.5).any() for p in shared.probabilities.values())


@pytest.mark.parametrize("n_structures", [1, 3])
def test_shared_video_equals_one_pass_per_structure(model, echo, n_structures):
    frames, boxes = echo
    boxes = boxes[:n_structures]
    shared = propagate_case(model, frames, boxes, PropagationOptions(mode="video"))
    _same(
        shared, propagate_case(model, frames, boxes, PropagationOptions(mode="video", share=False))
    )


def test_walks_equal_their_own_propagate_calls(model, ct):
    frames, boxes = ct
    walks = [Walk(b.index, b, o) for b in boxes[:3] for o in ("forward", "backward")]
    stop = WalkOptions(stop_when_empty=True)
    probs = model.propagate_walks(frames, walks, stop)
    for w, p in zip(walks, probs):
        assert torch.equal(p, model.propagate(frames, w.start, w.prompts, w.order, options=stop))


@pytest.mark.slow
def test_batched_walks_keep_the_masks(model, ct, echo):
    """One network call per step (the GPU default): masks unchanged, probabilities to 1e-4."""
    for (frames, boxes), mode in ((ct, "volume"), (echo, "video")):
        plain = propagate_case(model, frames, boxes, PropagationOptions(mode=mode))
        model.batch_walks = True
        try:
            batched = propagate_case(model, frames, boxes, PropagationOptions(mode=mode))
        finally:
            model.batch_walks = None
        for lab, p in plain.probabilities.items():
            np.testing.assert_allclose(batched.probabilities[lab], p, rtol=0, atol=1e-4)
        assert np.array_equal(batched.labels, plain.labels)


def test_per_slice_priors_are_shared_too(model, ct):
    frames, boxes = ct
    clean = propagate_case(model, frames, boxes[:2]).probabilities
    a = propagate_case(model, frames, boxes[:2], priors=clean)
    _same(
        a, propagate_case(model, frames, boxes[:2], PropagationOptions(share=False), priors=clean)
    )


def test_progress_and_cancel_across_walks(model, ct):
    frames, boxes = ct
    seen = []
    propagate_case(
        model,
        frames,
        boxes[:2],
        PropagationOptions(stop_when_empty=False),
        progress=lambda d, t: seen.append((d, t)),
    )
    total = sum(frames.shape[0] + 1 for _ in boxes[:2])
    assert [d for d, _ in seen] == list(range(1, total + 1)) and {t for _, t in seen} == {total}
    ev = threading.Event()

    def stop_at_3(done, _total):
        if done == 3:
            ev.set()

    with pytest.raises(Cancelled):
        propagate_case(model, frames, boxes[:2], progress=stop_at_3, cancel=ev)


def test_gradient_through_shared_walks_matches_separate_passes(model, ct):
    frames, boxes = ct
    grads = []
    for share in (True, False):
        x = frames[5:15].clone().requires_grad_(True)
        moved = [
            Box(b.y0, b.x0, b.y1, b.x1, index=min(max(b.index - 5, 0), 9), label=b.label)
            for b in boxes[:3]
        ]
        res = propagate_case(model, x, moved, PropagationOptions(grad=True, share=share))
        sum(p.sum() for p in res.tensors.values()).backward()
        grads.append(x.grad)
    assert grads[0].abs().sum() > 0
    # the same terms, summed in another order: equal to float32 rounding
    scale = float(grads[1].abs().max())
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-6 * scale)


def test_walks_one_after_the_other_count_the_steps_of_all():
    frames = np.zeros((6, 10, 10), np.float32)
    frames[:, 3:7, 2:6] = 1.0
    box = Box(3, 2, 7, 6, index=2)
    seen = []
    probs = ThresholdPromptModel().propagate_walks(
        frames,
        [Walk(2, box, "forward"), Walk(2, box, "backward")],
        WalkOptions(progress=lambda d, t: seen.append((d, t))),
    )
    assert [tuple(p.shape) for p in probs] == [(4, 10, 10), (3, 10, 10)]
    assert seen == [(i, 7) for i in range(1, 8)]
