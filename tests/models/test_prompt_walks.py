"""How the built-in backend feeds prompts to its network (the contract with its training).

A stand-in network records every input it is given; its output is its prior channel,
plus the positive clicks, minus the negative ones, so the effect of each pass is known.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from napari_segeval._errors import InvalidPromptError
from napari_segeval.models._prompt_net import PromptUNet
from napari_segeval.models.builtin_prompt import BuiltinPromptModel, save_weights
from napari_segeval.models.walk import Walk, WalkOptions
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet
from napari_segeval.propagation import PropagationOptions, propagate_case


class Recording(nn.Module):
    """Six input channels; logit = 20 * (prior + positive clicks - negative clicks - 0.5)."""

    takes_points = True

    def __init__(self):
        super().__init__()
        self.inputs = []

    def forward(self, x):
        self.inputs.append(x.detach().clone())
        return 20.0 * (x[:, 2:3] + x[:, 4:5] - x[:, 5:6] - 0.5)


@pytest.fixture
def model(tiny_prompt_weights):
    m = BuiltinPromptModel(tiny_prompt_weights, device="cpu")
    m.net = Recording()
    return m


def _frames(n=6):
    rng = np.random.default_rng(0)
    return rng.uniform(0.0, 1.0, (n, 40, 48)).astype(np.float32)


def test_box_then_clicks_on_the_start_frame(model):
    s = PromptSet.of(
        [
            Box(10, 12, 20, 24, index=2),
            Point(14, 16, index=2),
            Point(18, 22, index=2, positive=False),
        ]
    )
    model.propagate(_frames(), 2, s, "forward")
    base, click1, click2 = model.net.inputs[:3]
    for x in (base, click1, click2):  # the frame is its own previous frame on its prompts
        assert torch.equal(x[:, 0], x[:, 1])
    assert torch.equal(base[:, 2], base[:, 3]) and not base[:, 4:].any()  # prior = box
    assert click1[:, 3].any() and torch.equal(click1[:, 3], base[:, 3])  # same box, same window
    assert click1[:, 4].any() and not click1[:, 5].any()  # the positive click so far
    assert torch.equal(click2[:, 4], click1[:, 4]) and click2[:, 5].any()  # then the negative
    assert not torch.equal(click1[:, 2], base[:, 2])  # prior = the frame's current output
    step = model.net.inputs[3]  # the next frame: an ordinary step
    assert not torch.equal(step[:, 0], step[:, 1]) and not step[:, 3:].any()
    assert len(model.net.inputs) == 3 + 3


def test_box_reached_mid_walk_is_a_fresh_start(model):
    s = PromptSet.of([Box(10, 12, 20, 24, index=1), Box(12, 14, 22, 26, index=3)])
    model.propagate(_frames(), 1, s, "forward")
    mid = model.net.inputs[2]  # frames 1, 2, then the box on frame 3
    model.net.inputs.clear()
    model.propagate(_frames(), 3, s, "forward")
    assert torch.equal(mid, model.net.inputs[0])  # as if the walk started there
    assert torch.equal(mid[:, 0], mid[:, 1]) and torch.equal(mid[:, 2], mid[:, 3])


@pytest.mark.parametrize("side", [1, -1])
def test_a_click_on_one_side_of_the_box_leaves_the_other_side_as_the_box_alone(side):
    real = BuiltinPromptModel(device="cpu")  # the shipped weights take clicks
    frames = _frames(9)
    frames[:, 12:26, 14:30] += 0.8
    box = Box(12, 14, 26, 30, index=4)
    alone = propagate_case(real, frames, [box], PropagationOptions(keep_largest=False))
    s = PromptSet.of([box, Point(18, 20, index=4 + 3 * side, positive=side > 0)])
    both = propagate_case(real, frames, {1: s}, PropagationOptions(keep_largest=False))
    other = slice(0, 4) if side > 0 else slice(5, 9)
    np.testing.assert_array_equal(both.probabilities[1][other], alone.probabilities[1][other])
    assert not np.array_equal(
        both.probabilities[1][4 + 3 * side], alone.probabilities[1][4 + 3 * side]
    )


def test_a_mask_prompt_is_its_frame_output_without_a_pass(model):
    mask = np.zeros((40, 48), bool)
    mask[5:15, 6:20] = True
    out = model.propagate(_frames(), 2, PromptSet.of([MaskPrompt(mask, index=2)]), "forward")
    assert torch.equal(out[0], torch.as_tensor(mask, dtype=torch.float32))
    assert len(model.net.inputs) == 3  # frames 3, 4, 5 only


def test_points_only_start_from_nothing_in_a_default_window(model):
    from napari_segeval.models._prompt_net import CLICK_SIDE

    s = PromptSet.of([Point(20, 24, index=0), Point(21, 26, index=0)])
    out = model.propagate(_frames(3), 0, s, "forward")
    first = model.net.inputs[0]
    assert not first[:, 2].any() and first[:, 4].any()  # no base pass: prior zeros, a click
    assert len(model.net.inputs) == 2 + 2 and out[0][20, 24] > 0.5
    assert CLICK_SIDE == 64.0
    neg = PromptSet.of([Point(20, 24, index=0, positive=False), Box(10, 12, 20, 24, index=2)])
    model.net.inputs.clear()
    out = model.propagate(_frames(3), 0, neg, "forward")
    assert not out[0].any() and not out[1].any()  # nothing positive to start from: skipped
    assert len(model.net.inputs) == 1  # only the box frame runs


def test_crops_equal_full_frames(model, tiny_prompt_weights):
    real = BuiltinPromptModel(tiny_prompt_weights, device="cpu")
    walks = [
        Walk.of(PromptSet.of([Box(10, 12, 20, 24, index=2), Box(8, 10, 22, 30, index=4)]), o)
        for o in ("forward", "backward")
    ]
    full = real.propagate_walks(_frames(), walks)
    crops = real.propagate_walks(_frames(), walks, WalkOptions(crops=True))
    for f, c in zip(full, crops):
        assert torch.equal(c.full(), f)
        y0, x0, y1, x1 = c.boxes[0]
        assert (y1 - y0) * (x1 - x0) < 40 * 48  # the start frame: inside its box's window


def test_weights_without_click_channels_refuse_points_in_one_line(tiny_prompt_weights):
    m = BuiltinPromptModel(tiny_prompt_weights, device="cpu")
    assert not m.takes_points
    with pytest.raises(InvalidPromptError, match="not points") as info:
        propagate_case(
            m,
            _frames(),
            {1: PromptSet.of([Box(10, 12, 20, 24, index=2), Point(3, 3, index=4, positive=False)])},
        )
    assert str(tiny_prompt_weights) in str(info.value) and "\n" not in str(info.value)
    mask = np.zeros((40, 48), bool)
    mask[5:15, 6:20] = True
    res = propagate_case(
        m,
        _frames(),
        {
            1: PromptSet.of(
                [
                    Box(10, 12, 20, 24, index=1),
                    Box(12, 14, 22, 26, index=4),
                    MaskPrompt(mask, index=5),
                ]
            )
        },
    )
    assert res.labels.shape == (6, 40, 48)  # boxes on several slices and masks are fine


def test_six_channel_weights_take_clicks(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "clicks.pt"
    save_weights(
        PromptUNet(width=4, depth=2, in_channels=6).eval(),
        path,
        {"width": 4, "depth": 2, "size": 16, "in_channels": 6},
    )
    m = BuiltinPromptModel(path, device="cpu")
    assert m.takes_points
    sets = {
        1: PromptSet.of(
            [
                Box(10, 12, 20, 24, index=2),
                Point(14, 16, index=3),
                Point(30, 40, index=3, positive=False),
            ]
        ),
        2: PromptSet.of([Point(30, 30, index=1, label=2)]),
    }
    opts = PropagationOptions(stop_when_empty=False)
    a = propagate_case(m, _frames(), sets, opts)
    b = propagate_case(m, _frames(), sets, opts.replace(share=False))
    np.testing.assert_array_equal(a.labels, b.labels)
    m.batch_walks = True
    c = propagate_case(m, _frames(), sets, opts)
    for lab in sets:
        np.testing.assert_allclose(c.probabilities[lab], a.probabilities[lab], atol=1e-4)
