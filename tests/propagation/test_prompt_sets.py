"""Prompt sets through propagate_case: walks, union between conditioning frames, stops,
bad prompts, and results kept at the size of each structure's extent."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import InvalidPromptError
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.models.walk import Walk, WalkOptions
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_file import PromptFile
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, PromptSet
from napari_segeval.propagation import (
    PropagationOptions,
    as_prompt_sets,
    merge_structures,
    propagate_case,
)
from napari_segeval.propagation.core import make_walks, total_steps


class Recorder(ThresholdPromptModel):
    """Threshold backend that records each walk it is given."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def propagate_walks(self, frames, walks, *options):
        self.calls.extend((w.start, w.order, w.prompts) for w in walks)
        return super().propagate_walks(frames, walks, *options)


def _tube(n=12, y=(3, 7), x=(2, 6)):
    f = np.zeros((n, 10, 10), np.float32)
    f[:, y[0] : y[1], x[0] : x[1]] = 1.0
    return f


def test_one_box_is_the_one_line_case():
    box = Box(3, 2, 7, 6, index=4, label=2)
    sets = as_prompt_sets([box])
    assert sets == {2: PromptSet.from_box(box)} == as_prompt_sets({2: [box]})
    a = propagate_case(ThresholdPromptModel(), _tube(), [box])
    b = propagate_case(ThresholdPromptModel(), _tube(), sets)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.prompts == sets and a.params["prompt"] == "box"


def test_walks_start_at_first_and_last_conditioning_frames():
    s = PromptSet.of([Box(3, 2, 7, 6, index=6), Point(4, 4, index=2, positive=False)])
    model = Recorder()
    res = propagate_case(model, _tube(), {1: s}, PropagationOptions(stop_when_empty=False))
    assert [(k, o) for k, o, _ in model.calls] == [(2, "forward"), (6, "backward")]
    assert all(p == s for _, _, p in model.calls)  # the whole set, not one box
    assert total_steps(12, [s], "volume") == (12 - 2) + (6 + 1)
    assert res.params["conditioning_frames"] == {1: [2, 6]} and res.params["prompt"] == "box+point"
    video = make_walks({1: s}, PropagationOptions(mode="video"))
    assert [(w.start, w.order) for w in video] == [(2, "forward")]


def test_two_boxes_bridge_a_gap_that_one_box_cannot():
    frames = _tube()
    frames[5:7] = 0  # the object vanishes on slices 5-6
    one = propagate_case(ThresholdPromptModel(), frames, [Box(3, 2, 7, 6, index=2)])
    assert not one.labels[7:].any()  # the walk stopped at the gap
    two = PromptSet.of([Box(3, 2, 7, 6, index=2), Box(3, 2, 7, 6, index=9)])
    res = propagate_case(
        ThresholdPromptModel(), frames, {1: two}, PropagationOptions(keep_largest=False)
    )
    per_slice = (res.labels == 1).sum(axis=(1, 2)).tolist()
    assert per_slice == [16] * 5 + [0, 0] + [16] * 5  # each walk went on to its next box


def test_union_between_conditioning_frames_takes_the_maximum():
    frames = _tube(8)
    frames[:, 3:7, 2:4] = 0.6  # dimmer half: the soft threshold gives lower probabilities
    s = PromptSet.of([Box(3, 2, 7, 6, index=2), Box(3, 2, 7, 6, index=5)])
    res = propagate_case(ThresholdPromptModel(), frames, {1: s})
    stop = WalkOptions(stop_when_empty=True)
    fwd = ThresholdPromptModel().propagate(frames, 2, s, "forward", options=stop)
    bwd = ThresholdPromptModel().propagate(frames, 5, s, "backward", options=stop)
    expect = np.zeros((8, 10, 10), np.float32)
    expect[2:] = fwd.numpy()
    expect[:6] = np.maximum(expect[:6], bwd.numpy()[::-1])
    np.testing.assert_array_equal(res.probabilities[1], expect)


def test_confidence_stop_never_cuts_before_the_last_conditioning_frame():
    frames = _tube(10)
    frames[4, 3:7, 2:6] = 0.53  # faint: probability 0.65 there, and after it
    s = PromptSet.of([Box(3, 2, 7, 6, index=1), Box(3, 2, 7, 6, index=7)])
    res = propagate_case(
        ThresholdPromptModel(), frames, {1: s}, PropagationOptions(min_confidence=0.8)
    )
    assert (res.labels[:, 3:7, 2:6] == 1).all()  # kept: between two prompts
    single = propagate_case(
        ThresholdPromptModel(),
        frames,
        [Box(3, 2, 7, 6, index=1)],
        PropagationOptions(min_confidence=0.8),
    )
    assert single.labels[:4].any() and not single.labels[4:].any()  # the faint slice ends it


def test_walk_start_must_carry_a_prompt():
    s = PromptSet.of([Box(0, 0, 2, 2, index=3)])
    with pytest.raises(ValueError, match="conditioning frame"):
        Walk(1, s, "forward")
    assert Walk(1, Box(0, 0, 2, 2, index=3)).start == 1  # a box moves to the start


@pytest.mark.parametrize(
    "prompts, message",
    [
        ([Point(4, 4, index=1, positive=False)], "only negative points"),
        ([Box(3, 2, 7, 6, index=12)], "slice 12 does not exist"),
        ([Point(40, 4, index=1)], "lies outside the 10 x 10 slice"),
        ([MaskPrompt(np.ones((5, 5), bool), index=1)], "has shape 5 x 5, the slices are 10 x 10"),
    ],
)
def test_bad_prompts_are_one_line_errors(prompts, message):
    with pytest.raises(InvalidPromptError, match=message) as info:
        propagate_case(ThresholdPromptModel(), _tube(), {1: PromptSet.of(prompts)})
    assert "\n" not in str(info.value)


def test_video_frame_words():
    with pytest.raises(InvalidPromptError, match="frame 12 does not exist"):
        propagate_case(
            ThresholdPromptModel(),
            _tube(),
            [Box(0, 0, 2, 2, index=12)],
            PropagationOptions(mode="video"),
        )


def test_json_round_trip_replays_identical_masks(tmp_path):
    from napari_segeval.prompts.prompt_file import read_prompts, write_prompts

    frames = _tube()
    frames[:, 7:9, 7:10] = 1.0
    sets = {
        1: PromptSet.of([Box(3, 2, 7, 6, index=5), Point(4, 4, index=9, positive=False)]),
        3: PromptSet.of(
            [Point(7.6, 8.2, index=2), MaskPrompt(frames[6, :, :] > 0.5, index=6, label=3)], label=3
        ),
    }
    first = propagate_case(ThresholdPromptModel(), frames, sets)
    path = write_prompts(tmp_path / "p.prompts.json", PromptFile(first.prompts, frames.shape))
    again = propagate_case(ThresholdPromptModel(), frames, read_prompts(path))
    np.testing.assert_array_equal(first.labels, again.labels)
    for lab in sets:
        np.testing.assert_array_equal(first.probabilities[lab], again.probabilities[lab])


def _full_size_merge(probs: dict, masks: dict, nested_fraction: float = 0.5) -> np.ndarray:
    """The merge on full-size arrays, as it was before results were cropped (the oracle)."""
    ids = sorted(probs)
    size = {lab: int(masks[lab].sum()) for lab in ids}
    outers = {
        lab: [
            o
            for o in ids
            if o != lab
            and 0 < size[lab] < size[o]
            and (masks[lab] & masks[o]).sum() >= nested_fraction * size[lab]
        ]
        for lab in ids
    }
    best = np.zeros(probs[ids[0]].shape, np.float32)
    out = np.zeros(best.shape, np.uint8)
    for lab in sorted(ids, key=lambda i: (-size[i], i)):
        win = masks[lab] & (probs[lab] > best)
        if outers[lab]:
            win |= masks[lab] & np.isin(out, outers[lab])
        out[win] = lab
        best[win] = probs[lab][win]
    return out


def test_results_are_kept_at_the_size_of_each_extent_and_merge_as_full_arrays():
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel

    rng = np.random.default_rng(0)
    frames = rng.uniform(0.2, 0.3, (20, 96, 96)).astype(np.float32)
    frames[4:15, 10:30, 12:34] += 0.5
    frames[6:12, 50:70, 60:80] += 0.5
    frames[7:10, 18:24, 20:27] += 0.2  # a nested brighter part
    boxes = [
        Box(10, 12, 30, 34, index=9, label=1),
        Box(50, 60, 70, 80, index=9, label=2),
        Box(18, 20, 24, 27, index=8, label=3),
    ]
    res = propagate_case(BuiltinPromptModel(device="cpu"), frames, boxes)
    for lab, s in res.structures.items():
        assert s.probabilities.size < frames.size / 4  # a crop, not the volume
        full = res.probabilities[lab]
        assert (
            full.shape == frames.shape
            and not np.delete(
                full.reshape(-1),
                np.ravel_multi_index(
                    np.indices(s.probabilities.shape).reshape(3, -1) + np.reshape(s.offset, (3, 1)),
                    frames.shape,
                ),
            ).any()
        )
    np.testing.assert_array_equal(
        res.labels, _full_size_merge(dict(res.probabilities), dict(res.masks))
    )
    np.testing.assert_array_equal(res.labels, merge_structures(dict(res.probabilities)))
    assert set(np.unique(res.labels)) == {0, 1, 2, 3}
