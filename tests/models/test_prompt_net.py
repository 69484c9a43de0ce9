"""Windows and click maps of the built-in prompt network (one rule for training and inference)."""

import pytest
import torch

from napari_segeval.models._prompt_net import (
    CLICK_SIDE,
    CONTEXT,
    MIN_SIDE,
    PromptUNet,
    click_maps,
    refine_window,
    window_from_bbox,
    window_from_mask,
    window_from_points,
)


def test_window_from_mask_is_the_bbox_window_grown_by_positive_clicks_only():
    m = torch.zeros(50, 50)
    m[10:20, 10:30] = 1
    assert window_from_mask(m) == window_from_bbox(10, 10, 20, 30)
    assert window_from_mask(m, [(40, 45, False)]) == window_from_bbox(10, 10, 20, 30)
    assert window_from_mask(m, [(40, 45, True)]) == window_from_bbox(10, 10, 41, 46)
    assert window_from_mask(None, [(5, 6, True)]) == window_from_bbox(5, 6, 6, 7)


def test_window_from_points_is_a_fixed_square_around_the_clicks():
    cy, cx, half = window_from_points([(30, 40, True), (10, 10, False)])
    assert (cy, cx, half) == (30.5, 40.5, CLICK_SIDE / 2)
    assert window_from_points([(3, 3, True)], side=4)[2] == MIN_SIDE / 2
    spread = window_from_points([(0, 0, True), (99, 9, True)])
    assert spread[2] == pytest.approx(100 * CONTEXT / 2)
    with pytest.raises(ValueError, match="needs a positive point"):
        window_from_points([(1, 1, False)])


def test_refine_window_box_then_mask_prompt_then_output_then_clicks():
    m = torch.zeros(64, 64)
    click = [(20, 20, True)]
    assert refine_window(m, click) == window_from_points(click)
    m[5:9, 5:9] = 1
    assert refine_window(m, click) == window_from_mask(m, click)
    painted = torch.zeros(64, 64)
    painted[30:40, 30:50] = 1
    assert refine_window(m, click, prompt_mask=painted) == window_from_mask(painted)
    assert refine_window(m, click, box=(1, 2, 11, 12), prompt_mask=painted) == (
        window_from_bbox(1, 2, 11, 12)
    )
    assert refine_window(torch.zeros(8, 8), [(2, 2, False)]) is None


def test_click_inside_the_window_is_drawn_where_it_is():
    win = torch.tensor([[32.0, 32.0, 16.0]])  # native 16..48 -> 32 window pixels, scale 1
    maps = click_maps([[(20, 30, True)]], win, 32)
    ys, xs = torch.nonzero(maps[0, 0], as_tuple=True)
    assert (float(ys.float().mean()), float(xs.float().mean())) == (4.0, 14.0)
    assert maps[0, 1].sum() == 0


def test_four_channel_inputs_mean_no_clicks():
    net = PromptUNet(width=4, depth=2, in_channels=6).eval()
    x = torch.rand(2, 4, 16, 16)
    assert torch.equal(net(x), net(torch.cat([x, torch.zeros(2, 2, 16, 16)], 1)))
    with pytest.raises(ValueError, match="in_channels must be 4 or 6"):
        PromptUNet(in_channels=5)
