"""Corrections: a prompt after round 0 refines the built-in model's result, locally.

A stand-in network (output = prior + positive clicks - negative clicks) makes the effect
of every pass known, so which slices a correction changes is a known answer.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from torch import nn

from napari_segeval._cancel import Cancelled
from napari_segeval.models.base import Corrections
from napari_segeval.models.builtin_prompt import BuiltinPromptModel
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import Point, PromptSet
from napari_segeval.propagation import PropagationOptions, PropagationSession, propagate_case
from napari_segeval.propagation.corrections import corrects, round0_length

BOX = Box(10, 12, 20, 24, index=4)


class Echo(nn.Module):
    """Six input channels; logit = 20 * (prior + positive clicks - negative clicks - 0.5)."""

    takes_points = True

    def __init__(self):
        super().__init__()
        self.passes = 0

    def forward(self, x):
        self.passes += x.shape[0]
        return 20.0 * (x[:, 2:3] + x[:, 4:5] - x[:, 5:6] - 0.5)


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    from napari_segeval.models._prompt_net import PromptUNet
    from napari_segeval.models.builtin_prompt import save_weights

    path = tmp_path_factory.mktemp("echo") / "echo.pt"
    save_weights(
        PromptUNet(width=4, depth=2, in_channels=6).eval(),
        path,
        {"width": 4, "depth": 2, "size": 64, "in_channels": 6},
    )
    return path


@pytest.fixture
def model(weights):
    m = BuiltinPromptModel(weights, device="cpu")
    m.net = Echo()
    return m


def _frames(n=9):
    return np.random.default_rng(0).uniform(0.0, 1.0, (n, 40, 48)).astype(np.float32)


def _same(a, b):
    np.testing.assert_array_equal(a.labels, b.labels)
    for lab in a.probabilities:
        np.testing.assert_array_equal(a.probabilities[lab], b.probabilities[lab])
        np.testing.assert_array_equal(a.masks[lab], b.masks[lab])


def test_round0_is_everything_up_to_the_last_box_or_mask():
    s = PromptSet.of(
        [BOX, Box(8, 8, 20, 20, index=6), Point(12, 14, index=2), Point(13, 14, index=3)]
    )
    assert round0_length(s) == 2
    assert round0_length(s.add(Box(8, 8, 20, 20, index=1))) == 5  # a later box: all again
    assert round0_length(PromptSet.of([BOX])) == 1
    assert round0_length(PromptSet.of([Point(12, 14, index=2), BOX])) == 2
    assert round0_length(PromptSet.of([Point(12, 14, index=2)])) == 1  # points only


def test_only_backends_with_correct_and_volumes_take_corrections(model):
    assert corrects(model, PropagationOptions())
    assert not corrects(model, PropagationOptions(mode="video"))
    assert not corrects(model, PropagationOptions(grad=True))
    assert not corrects(ThresholdPromptModel(), PropagationOptions())


def test_a_click_changes_the_slices_that_share_its_error_and_nothing_else(model):
    frames = _frames()
    alone = propagate_case(model, frames, [BOX])
    assert alone.masks[1].any(axis=(1, 2)).all()  # the stand-in keeps the box everywhere
    s = PromptSet.of([BOX, Point(20, 18, index=6)])  # just below the box: a false negative
    res = propagate_case(model, frames, {1: s})
    changed = [z for z in range(9) if not np.array_equal(res.masks[1][z], alone.masks[1][z])]
    assert changed == [5, 6, 7, 8]  # walking both ways; the box slice 4 stops it
    for z in range(5):
        np.testing.assert_array_equal(res.probabilities[1][z], alone.probabilities[1][z])
    assert res.masks[1][6, 20, 18] and (res.masks[1][6] >= alone.masks[1][6]).all()


def test_a_click_stops_at_a_slice_without_a_mask_and_at_a_prompted_slice(model):
    frames = _frames()
    s = PromptSet.of([BOX, Box(10, 12, 20, 24, index=7), Point(20, 18, index=5)])
    res = propagate_case(model, frames, {1: s})
    before = propagate_case(model, frames, {1: PromptSet.of(s.prompts[:2])})
    changed = [z for z in range(9) if not np.array_equal(res.masks[1][z], before.masks[1][z])]
    assert changed == [5, 6]  # between the boxes on slices 4 and 7


def test_a_click_spreads_at_most_max_spread_slices_each_way(model):
    from napari_segeval.models._prompt_corrections import MAX_SPREAD

    frames = _frames(12)
    box = Box(10, 12, 20, 24, index=1)
    alone = propagate_case(model, frames, [box])
    res = propagate_case(model, frames, {1: PromptSet.of([box, Point(20, 18, index=6)])})
    changed = [z for z in range(12) if not np.array_equal(res.masks[1][z], alone.masks[1][z])]
    assert MAX_SPREAD == 2 and changed == [4, 5, 6, 7, 8]


def test_a_negative_click_that_empties_its_slice_goes_no_further(model):
    frames = _frames()
    dot = Box(15, 15, 16, 16, index=4)  # one pixel on every slice
    alone = propagate_case(model, frames, [dot])
    assert alone.masks[1].sum() == 9
    res = propagate_case(
        model, frames, {1: PromptSet.of([dot, Point(15, 15, index=6, positive=False)])}
    )
    assert not res.masks[1][6].any()
    for z in (5, 7, 8):  # no walk from an empty slice (7 and 8 then lose the largest component)
        np.testing.assert_array_equal(res.probabilities[1][z], alone.probabilities[1][z])
    assert res.masks[1][:6].sum() == 6 and not res.masks[1][7:].any()


def test_nothing_spreads_from_a_neighbouring_slice_the_click_leaves_empty(model):
    # a negative click on a structure's tip: slices 5-7 hold one pixel under the click
    frames = _frames(10)
    previous = np.zeros((10, 40, 48), bool)
    previous[4, 10:22, 10:22] = True
    previous[5:8, 15, 15] = True
    s = PromptSet.of([Box(10, 10, 22, 22, index=0), Point(15, 15, index=4, positive=False)])
    changed = model.correct(frames, s, previous)
    assert not (changed[5] > 0.5).any()  # the click empties slice 5: the direction ends
    assert sorted(changed) == [4, 5]


def test_replay_equals_the_session_that_applied_only_the_new_corrections(model):
    frames = _frames()
    session = PropagationSession(model, frames)
    session.set_prompts(
        {1: PromptSet.of([BOX]), 2: PromptSet.of([Box(24, 30, 34, 44, index=3, label=2)])}
    )
    session.propagate()
    for point in (
        Point(20, 18, index=6),
        Point(12, 14, index=2, positive=False),
        Point(30, 28, index=5, label=2),
    ):
        model.net.passes = 0
        session.add(point)
        res = session.propagate()
        assert model.net.passes < 9  # no walk through the volume: the correction only
        _same(res, propagate_case(model, frames, session.prompts))
    session.undo(1)  # not an added correction: propagated again from its prompts
    _same(session.propagate(), propagate_case(model, frames, session.prompts))


def test_a_cancelled_round_leaves_no_correction_half_applied(model):
    # structure 1 gets a correction (applied first), structure 2 a box (propagated
    # after it); cancelling during structure 2 must not keep structure 1's correction
    # without recording it, or the next round applies the click a second time
    frames = _frames()
    session = PropagationSession(model, frames)
    session.set_prompts(
        {1: PromptSet.of([BOX]), 2: PromptSet.of([Box(24, 30, 34, 44, index=3, label=2)])}
    )
    kept = session.propagate().structures[1]
    session.add(Point(20, 18, index=6))
    session.add(Box(24, 30, 36, 44, index=5, label=2))
    stop = threading.Event()

    def on_slice(label, index, mask):
        if label == 2:
            stop.set()

    with pytest.raises(Cancelled):
        session.propagate(cancel=stop, on_slice=on_slice)
    assert session.structures[1] is kept and sorted(session.stale()) == [1, 2]
    _same(session.propagate(), propagate_case(model, frames, session.prompts))


def test_a_seeded_structure_is_propagated_again_on_its_first_correction(model):
    frames = _frames()
    saved = np.zeros((9, 40, 48), np.uint8)
    saved[2:6, 5:15, 5:15] = 1
    session = PropagationSession(model, frames)
    session.seed(saved, [BOX])
    session.add(Point(20, 18, index=6))
    _same(session.propagate(), propagate_case(model, frames, session.prompts))


class BoxOnly(nn.Module):
    """Four input channels (weights without clicks); logit = 20 * (prior - 0.5)."""

    takes_points = False

    def __init__(self):
        super().__init__()
        self.passes = 0

    def forward(self, x):
        self.passes += x.shape[0]
        return 20.0 * (x[:, 2:3] - 0.5)


def test_weights_without_clicks_refuse_a_correction_before_walking(tmp_path):
    from napari_segeval._errors import InvalidPromptError
    from napari_segeval.models._prompt_net import PromptUNet
    from napari_segeval.models.builtin_prompt import save_weights

    path = tmp_path / "boxes.pt"
    save_weights(PromptUNet(width=4, depth=2).eval(), path, {"width": 4, "depth": 2, "size": 64})
    m = BuiltinPromptModel(path, device="cpu")
    m.net = BoxOnly()
    s = PromptSet.of([BOX, Point(20, 18, index=6)])
    with pytest.raises(InvalidPromptError, match="not points"):
        propagate_case(m, _frames(), {1: s})
    assert m.net.passes == 0  # refused in one line before the whole volume is walked
    session = PropagationSession(m, _frames())
    session.add(BOX)
    session.add(s.prompts[1])
    with pytest.raises(InvalidPromptError, match="not points"):
        session.propagate()
    assert m.net.passes == 0


def test_the_shipped_model_leaves_slices_far_from_a_click_unchanged():
    real = BuiltinPromptModel(device="cpu")
    frames = _frames(12)
    frames[:, 12:26, 14:30] += 0.8
    box = Box(12, 14, 26, 30, index=5)
    alone = propagate_case(real, frames, [box])
    s = PromptSet.of([box, Point(19, 32, index=9)])
    res = propagate_case(real, frames, {1: s})
    np.testing.assert_array_equal(res.probabilities[1][:6], alone.probabilities[1][:6])
    np.testing.assert_array_equal(res.masks[1][:6], alone.masks[1][:6])
    assert not np.array_equal(res.probabilities[1][9], alone.probabilities[1][9])


@pytest.mark.parametrize(
    "frames, previous, message",
    [
        (np.zeros((2, 6, 16, 16, 3, 1), np.float32), np.zeros((6, 16, 16), bool), "frames must be"),
        (np.zeros((16, 16), np.float32), np.zeros((6, 16, 16), bool), "frames must be"),
        (np.zeros((6, 16, 16), np.float32), np.zeros((5, 16, 16), bool), "previous masks must"),
        (np.zeros((6, 16, 16), np.float32), np.zeros((6, 16, 17), bool), "previous masks must"),
    ],
)
def test_correct_refuses_frames_and_previous_masks_of_the_wrong_shape(frames, previous, message):
    s = PromptSet.of([Box(2, 2, 8, 8, index=1), Point(4, 4, index=3)])
    with pytest.raises(ValueError, match=message):
        BuiltinPromptModel(device="cpu").correct(frames, s, previous)


def test_the_threshold_model_still_propagates_every_prompt():
    frames = np.ones((6, 8, 8), np.float32)
    s = PromptSet.of([Box(2, 2, 6, 6, index=1), Point(3, 3, index=4, positive=False)])
    m = ThresholdPromptModel()
    a = propagate_case(m, frames, {1: s})
    session = PropagationSession(m, frames)
    session.set_prompts({1: PromptSet.of(s.prompts[:1])})
    session.propagate()
    session.add(s.prompts[1])
    _same(session.propagate(), a)


def _extent(first, last, n=9):
    """A previous result: the box's square on slices ``first..last`` only."""
    from napari_segeval.propagation.result import StructureResult

    m = np.zeros((n, 40, 48), bool)
    m[first : last + 1, 10:20, 12:24] = True
    return StructureResult(1, (0, 0, 0), m.astype(np.float32), m, m.shape)


def test_a_positive_click_beyond_the_extent_is_bridged_to_it(model):
    from napari_segeval.propagation.corrections import apply_correction

    before = _extent(3, 8)
    s = PromptSet.of([BOX, Point(15, 18, index=1)])  # two slices before the extent
    after = apply_correction(model, _frames(), before, s, PropagationOptions(), None)
    mask = after.full_mask()
    assert mask.any(axis=(1, 2)).tolist() == [False] + [True] * 8  # slices 2 and 1 filled
    np.testing.assert_array_equal(mask[1], before.full_mask()[3])
    np.testing.assert_array_equal(mask[2], before.full_mask()[3])
    np.testing.assert_array_equal(mask[3:], before.full_mask()[3:])


def test_a_click_that_cannot_be_bridged_keeps_its_own_component(model):
    from napari_segeval.propagation.corrections import correct_structures

    before = _extent(4, 8)
    # a negative click on slice 2 (empty: no change) lies between the extent and slice 1
    s = PromptSet.of([BOX, Point(15, 18, index=2, positive=False), Point(15, 18, index=1)])
    fixed = correct_structures(
        model, _frames(), {1: before}, {1: s}, {1: 1}, PropagationOptions(), None, None, 0, 2
    )
    after = fixed[1]
    mask = after.full_mask()
    assert not mask[2].any() and not mask[3].any() and not mask[0].any()
    assert mask[1, 15, 18] and 0 < mask[1].sum() < 40  # the click's own blob, not dropped
    np.testing.assert_array_equal(mask[4:], before.full_mask()[4:])
    from napari_segeval.propagation.masks import largest_component

    # the largest component alone would drop it: the kept-click rule is what keeps it
    assert not largest_component(mask, PropagationOptions().connectivity)[1].any()


@pytest.mark.parametrize("share", [True, False])
def test_progress_counts_round0_walks_then_one_step_per_correction(model, share):
    from napari_segeval.propagation.core import total_steps

    s = PromptSet.of([BOX, Point(20, 18, index=7), Point(12, 14, index=1, positive=False)])
    calls = []
    propagate_case(
        model,
        _frames(),
        {1: s},
        PropagationOptions(stop_when_empty=False, share=share),
        progress=lambda d, t: calls.append((d, t)),
    )
    # round 0 walks from the box on slice 4 (5 forward + 5 backward), then 2 corrections
    assert total_steps(9, {1: s}, "volume", corrections=Corrections.POINTS) == 12
    assert calls == [(d, 12) for d in range(1, 13)]
    assert total_steps(9, {1: s}, "volume") == 8 + 8  # walks of the whole set, no corrections


def test_a_round_of_corrections_reports_one_step_each(model):
    session = PropagationSession(model, _frames(), PropagationOptions(stop_when_empty=False))
    session.set_prompts(
        {1: PromptSet.of([BOX]), 2: PromptSet.of([Box(24, 30, 34, 44, index=3, label=2)])}
    )
    session.propagate()
    session.add(Point(20, 18, index=6))
    session.add(Point(12, 14, index=2, positive=False))
    calls = []
    res = session.propagate(progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 2), (2, 2)]
    _same(
        res,
        propagate_case(
            model, _frames(), session.prompts, PropagationOptions(stop_when_empty=False)
        ),
    )
    session.add(Point(20, 20, index=5))  # a correction, then a walk of structure 2 again
    session.add(Box(24, 30, 36, 44, index=5, label=2))
    calls.clear()
    session.propagate(progress=lambda d, t: calls.append((d, t)))
    # 1 click; structure 2's walks: 6 forward from slice 3, 6 backward from slice 5
    assert calls == [(d, 1 + 6 + 6) for d in range(1, 14)]


class NoClicks(Echo):
    """As :class:`Echo`, but any pass with a positive click comes out empty."""

    def forward(self, x):
        out = super().forward(x)
        clicked = x[:, 4:5].flatten(1).amax(1) > 0
        return torch.where(clicked[:, None, None, None], torch.full_like(out, -10.0), out)


def test_a_bridge_to_a_click_that_finds_nothing_is_not_kept(model):
    from napari_segeval.propagation.corrections import apply_correction

    model.net = NoClicks()
    before = _extent(3, 8)
    s = PromptSet.of([BOX, Point(15, 18, index=1)])
    after = apply_correction(model, _frames(), before, s, PropagationOptions(), None)
    np.testing.assert_array_equal(after.full_mask(), before.full_mask())  # slice 2 not kept
