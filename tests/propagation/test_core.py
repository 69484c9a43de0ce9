"""Propagation order, modes, merging, cancel and progress with a weight-free backend."""

import threading
from dataclasses import replace

import numpy as np
import pytest

from napari_segeval._cancel import Cancelled
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.prompts.box import Box
from napari_segeval.propagation import PropagationOptions, merge_structures, propagate_case
from napari_segeval.propagation.core import total_steps


class Recorder(ThresholdPromptModel):
    """Threshold backend that records each call's key index and order."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def propagate_walks(self, frames, walks, *options):
        self.calls.extend((w.start, w.order) for w in walks)
        return super().propagate_walks(frames, walks, *options)


def _tube(n=9, y=(3, 7), x=(2, 6)):
    f = np.zeros((n, 10, 10), np.float32)
    f[:, y[0] : y[1], x[0] : x[1]] = 1.0
    return f


def test_volume_fills_both_halves_from_middle_key():
    model = Recorder()
    frames = _tube()
    res = propagate_case(
        model, frames, [Box(3, 2, 7, 6, index=4, label=1)], PropagationOptions(mode="volume")
    )
    assert model.calls == [(4, "forward"), (4, "backward")]
    per_slice = (res.labels == 1).sum(axis=(1, 2))
    assert np.all(per_slice == 16)  # slices 0..8, both sides of the key
    assert np.array_equal(res.labels[0] == 1, frames[0] > 0.5)


def test_video_forward_only_leaves_earlier_frames_untouched():
    model = Recorder()
    res = propagate_case(
        model, _tube(), [Box(3, 2, 7, 6, index=3, label=2)], PropagationOptions(mode="video")
    )
    assert model.calls == [(3, "forward")]
    assert not res.labels[:3].any() and not res.probabilities[2][:3].any()
    assert np.all((res.labels[3:] == 2).sum(axis=(1, 2)) == 16)


def test_stops_when_object_disappears():
    frames = _tube()
    frames[6:] = 0  # the object ends after slice 5
    box = Box(3, 2, 7, 6, index=2)
    stop = propagate_case(
        ThresholdPromptModel(), frames, [box], PropagationOptions(stop_when_empty=True)
    )
    assert np.all((stop.labels[:6] == 1).sum(axis=(1, 2)) == 16)
    assert not stop.labels[6:].any()
    assert stop.probabilities[1][7:].max() == 0  # never evaluated after the stop
    cont = propagate_case(
        ThresholdPromptModel(), frames, [box], PropagationOptions(stop_when_empty=False)
    )
    assert not cont.labels[6:].any() and cont.probabilities[1][7:].max() > 0


def test_merge_higher_probability_wins():
    a = np.zeros((1, 2, 4), np.float32)
    b = np.zeros((1, 2, 4), np.float32)
    a[0, :, :3] = [0.9, 0.7, 0.75]
    b[0, :, 1:] = [0.8, 0.6, 0.95]
    out = merge_structures({1: a, 2: b}, keep_largest=False)
    assert out[0, 0].tolist() == [1, 2, 1, 2]


def test_two_structures_in_one_case():
    frames = _tube()
    frames[:, 7:9, 7:10] = 1.0  # second object, separate
    boxes = [Box(3, 2, 7, 6, index=4, label=1), Box(7, 7, 9, 10, index=4, label=3)]
    res = propagate_case(ThresholdPromptModel(), frames, boxes)
    assert set(np.unique(res.labels)) == {0, 1, 3}
    assert (res.labels == 3).sum() == 9 * 6
    assert sorted(res.probabilities) == [1, 3] and res.params["mode"] == "volume"


def test_keep_largest_component_3d():
    p = np.zeros((9, 10, 10), np.float32)
    p[:, 3:7, 2:6] = 0.9  # a tube through every slice
    p[4, 8:10, 8:10] = 0.9  # a separate speck
    out = merge_structures({1: p}, keep_largest=True)
    assert not out[4, 8:10, 8:10].any() and out[:, 3:7, 2:6].all()
    assert merge_structures({1: p}, keep_largest=False)[4, 8:10, 8:10].all()


def test_progress_counts_every_step():
    calls = []
    boxes = [Box(3, 2, 7, 6, index=4, label=1), Box(3, 2, 7, 6, index=1, label=2)]
    propagate_case(
        ThresholdPromptModel(),
        _tube(),
        boxes,
        PropagationOptions(stop_when_empty=False),
        progress=lambda d, t: calls.append((d, t)),
    )
    total = total_steps(9, boxes, "volume")
    assert total == (5 + 5) + (8 + 2)
    assert [d for d, _ in calls] == list(range(1, total + 1))
    assert all(t == total for _, t in calls)


def test_cancel_from_progress_raises_and_returns_nothing():
    ev = threading.Event()
    seen = []

    def progress(done, total):
        seen.append(done)
        if done == 3:
            ev.set()

    with pytest.raises(Cancelled):
        propagate_case(
            ThresholdPromptModel(),
            _tube(),
            [Box(3, 2, 7, 6, index=4)],
            progress=progress,
            cancel=ev,
        )
    assert seen[-1] == 3


def test_gradient_reaches_frames_through_structure():
    import torch

    frames = torch.tensor(_tube(5) * 0.8 + 0.1, requires_grad=True)
    options = PropagationOptions(grad=True)
    p = propagate_case(ThresholdPromptModel(), frames, [Box(3, 2, 7, 6, index=2)], options).tensors[
        1
    ]
    p[0].sum().backward()
    assert frames.grad[0].abs().sum() > 0 and frames.grad[2].abs().sum() > 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        propagate_case(
            ThresholdPromptModel(), _tube(), [Box(0, 0, 2, 2)], PropagationOptions(mode="sideways")
        )
    with pytest.raises(ValueError, match="one box per structure"):
        propagate_case(ThresholdPromptModel(), _tube(), [Box(0, 0, 2, 2), Box(1, 1, 3, 3)])
    with pytest.raises(ValueError, match="at least one"):
        propagate_case(ThresholdPromptModel(), _tube(), [])


def _faint_end(n=9):
    frames = _tube(n)
    frames[6:, 3:7, 2:6] = 0.53  # past slice 5 the "object" is barely above the level
    return frames


def test_confidence_stop_cuts_low_confidence_tail():
    box = Box(3, 2, 7, 6, index=2)
    plain = propagate_case(ThresholdPromptModel(), _faint_end(), [box])
    assert (plain.labels[6] == 1).sum() == 16  # without the rule the faint slice is kept
    cut = propagate_case(
        ThresholdPromptModel(), _faint_end(), [box], PropagationOptions(min_confidence=0.8)
    )
    assert np.all((cut.labels[:6] == 1).sum(axis=(1, 2)) == 16)
    assert not cut.labels[6:].any() and not cut.probabilities[1][6:].any()
    assert cut.params["min_confidence"] == 0.8 and plain.params["min_confidence"] is None


def test_confidence_stop_never_cuts_key_and_keeps_gradient():
    import torch

    from napari_segeval.propagation.walks import confidence_stop

    p = torch.full((3, 2, 2), 0.6)
    assert confidence_stop(p, 0.9) == 1  # the key frame always stays
    assert confidence_stop(torch.zeros(3, 2, 2), 0.9) == 3  # empty frames do not stop
    frames = torch.tensor(_faint_end(), requires_grad=True)
    out = propagate_case(
        ThresholdPromptModel(),
        frames,
        [Box(3, 2, 7, 6, index=2)],
        PropagationOptions(grad=True, min_confidence=0.8),
    ).tensors[1]
    assert not out[6:].detach().any()
    out[:6].sum().backward()
    assert frames.grad[0].abs().sum() > 0 and frames.grad[5].abs().sum() > 0


class Calibrated(ThresholdPromptModel):
    """Threshold backend that declares its own confidence stop."""

    capabilities = replace(ThresholdPromptModel.capabilities, stop_confidence=0.8)


def test_auto_confidence_uses_the_model_value():
    box = Box(3, 2, 7, 6, index=2)
    res = propagate_case(Calibrated(), _faint_end(), [box])  # default "auto"
    assert res.params["min_confidence"] == 0.8 and not res.labels[6:].any()
    off = propagate_case(Calibrated(), _faint_end(), [box], PropagationOptions(min_confidence=None))
    assert (off.labels[6] == 1).sum() == 16
    with pytest.raises(ValueError, match="min_confidence"):
        propagate_case(
            Calibrated(), _faint_end(), [box], PropagationOptions(min_confidence="sometimes")
        )


def test_nested_structure_wins_inside_its_enclosing_structure():
    organ = np.zeros((3, 8, 8), np.float32)
    organ[:, 1:7, 1:7] = 0.99
    lesion = np.zeros_like(organ)
    lesion[1, 3:5, 3:5] = 0.7
    labels = merge_structures({1: organ, 5: lesion})
    assert (labels == 5).sum() == 4 and (labels == 1).sum() == 3 * 36 - 4
    plain = merge_structures({1: organ, 5: lesion}, nested_fraction=None)
    assert not (plain == 5).any()
