"""Where walks end and why (propagation.trace), on results with a known answer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.models.walk import StopReason, Walk, WalkOutput
from napari_segeval.prompts.box import Box
from napari_segeval.propagation import PropagationOptions, propagate_case
from napari_segeval.propagation.trace import structure_trace, walk_end

BOX = Box(0, 0, 2, 2, index=2)


def _out(values: list, **kw) -> WalkOutput:
    frames = list(range(2, 2 + len(values)))
    boxes = [None if v is None else (0, 0, 2, 2) for v in values]
    vals = [None if v is None else torch.full((2, 2), float(v)) for v in values]
    return WalkOutput(frames, boxes, vals, (2, 2), **kw)


def test_a_walk_that_reaches_the_end_of_the_stack_has_no_end():
    assert walk_end(Walk(1, BOX, "forward"), _out([0.9, 0.9, 0.8]), 3) is None


def test_an_empty_slice_ends_the_walk_on_the_slice_before():
    end = walk_end(Walk(1, BOX, "forward"), _out([0.9, 0.8, 0.1, None]), 4)
    assert (end.last, end.after, end.reason) == (3, 4, StopReason.EMPTY)
    assert end.slices == (3, 4) and not end.reason.is_quality_stop


def test_the_confidence_stop_is_a_quality_stop():
    end = walk_end(Walk(1, BOX, "forward"), _out([0.9, 0.9, 0.9, 0.9]), 2)
    assert (end.last, end.after, end.reason) == (3, 4, StopReason.CONFIDENCE)
    assert end.reason.is_quality_stop


def test_the_backend_stop_is_kept_with_its_reason():
    out = _out([0.9, 0.9, None], stopped=StopReason.IOU, quality=[0.9, 0.7, None])
    trace = structure_trace([(Walk(1, BOX, "forward"), out)], None)
    assert [(e.last, e.after, e.reason) for e in trace.quality_stops] == [(3, 4, StopReason.IOU)]
    assert dict(trace.quality) == pytest.approx({2: 0.9, 3: 0.7})


def test_a_walk_that_found_nothing_ends_on_its_start():
    end = walk_end(Walk(1, BOX, "forward"), _out([0.1, None]), 2)
    assert (end.last, end.after, end.reason) == (2, 3, StopReason.EMPTY)


def test_frames_reached_by_two_walks_keep_the_best_quality_and_the_worst_agreement():
    fwd = _out([0.9, 0.9], quality=[0.8, 0.7], agreement=[0.9, 0.5])
    bwd = WalkOutput(
        [2],
        [(0, 0, 2, 2)],
        [torch.full((2, 2), 0.9)],
        (2, 2),
        quality=[0.95],
        agreement=[0.6],
    )
    trace = structure_trace([(Walk(1, BOX, "forward"), fwd), (Walk(1, BOX, "backward"), bwd)], None)
    assert trace.quality[2] == pytest.approx(0.95) and trace.agreement[2] == pytest.approx(0.6)


def test_propagation_records_where_an_object_ends():
    """A bright block on slices 2-5 of 9: both walks end at its faces, the mask ended."""
    frames = np.zeros((9, 12, 12), np.float32)
    frames[2:6, 3:9, 3:9] = 1.0
    res = propagate_case(
        ThresholdPromptModel(),
        frames,
        [Box(3, 3, 9, 9, index=4, label=1)],
        PropagationOptions(min_confidence=None),
    )
    trace = res.structures[1].trace
    ends = {e.order: (e.last, e.after, e.reason) for e in trace.ends}
    assert ends == {
        "forward": (5, 6, StopReason.EMPTY),
        "backward": (2, 1, StopReason.EMPTY),
    }
    assert not trace.quality and not trace.quality_stops
