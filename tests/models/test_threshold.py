"""The threshold baseline with every prompt kind: seeds grow, negative points block."""

from __future__ import annotations

import numpy as np
import torch

from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.models.walk import WalkOptions
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet


def _two_blobs(n=4):
    f = np.zeros((n, 12, 12), np.float32)
    f[:, 1:4, 1:4] = 1.0  # blob A, 9 pixels
    f[:, 6:10, 6:10] = 1.0  # blob B, 16 pixels
    return f


def _count(p):
    return (p > 0.5).sum(dim=(1, 2)).tolist()


def test_a_positive_point_grows_its_region_only():
    m = ThresholdPromptModel()
    p = m.propagate(_two_blobs(), 0, PromptSet.of([Point(7, 7, index=0)]))
    assert _count(p) == [16, 16, 16, 16]
    assert not bool((p[:, 1:4, 1:4] > 0.5).any())  # the other blob is not a seed's region


def test_a_seed_outside_the_band_grows_nothing():
    m = ThresholdPromptModel()
    s = PromptSet.of([Point(5, 5, index=0), Box(6, 6, 10, 10, index=2)])
    p = m.propagate(_two_blobs(), 0, s)
    assert _count(p)[:2] == [0, 0] and _count(p)[2] == 16


def test_a_negative_point_removes_its_region_and_blocks_later_frames():
    m = ThresholdPromptModel(reach=1)
    box = Box(0, 0, 12, 12, index=0)
    plain = m.propagate(_two_blobs(), 0, box)
    assert _count(plain) == [25, 25, 25, 25]
    blocked = m.propagate(
        _two_blobs(), 0, PromptSet.of([box, Point(2, 2, index=1, positive=False)])
    )
    assert _count(blocked) == [25, 16, 16, 16]  # blob A gone from frame 1 on


def test_a_box_on_a_later_frame_replaces_the_prior():
    f = _two_blobs()
    s = PromptSet.of([Box(1, 1, 4, 4, index=0), Box(6, 6, 10, 10, index=2)])
    p = ThresholdPromptModel().propagate(f, 0, s)
    assert _count(p) == [9, 9, 16, 16]
    assert bool((p[2:, 6:10, 6:10] > 0.5).all()) and not bool((p[2:, 1:4, 1:4] > 0.5).any())


def test_a_mask_prompt_is_its_frame_output():
    f = _two_blobs()
    mask = np.zeros((12, 12), bool)
    mask[6:8, 6:8] = True
    s = PromptSet.of([MaskPrompt(mask, index=1), Point(2, 2, index=1)])
    p = ThresholdPromptModel().propagate(f, 1, s, "backward")
    assert _count(p) == [4 + 9, 9 + 9]  # the mask and the seed's blob, then grown from them
    assert torch.equal(p[0][6:8, 6:8], torch.ones(2, 2))


def test_gradient_through_points():
    f = torch.tensor(_two_blobs() * 0.8 + 0.1, requires_grad=True)
    s = PromptSet.of([Point(7, 7, index=0), Point(2, 2, index=1)])
    p = ThresholdPromptModel().propagate(f, 0, s, options=WalkOptions(grad=True))
    p[2].sum().backward()
    assert f.grad[2].abs().sum() > 0 and f.grad[0].abs().sum() > 0
