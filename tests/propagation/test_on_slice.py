"""``propagate_case(on_slice=...)``: slices reported as computed, the result unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.prompts.box import Box
from napari_segeval.propagation import PropagationOptions, propagate_case


def _frames(n=11):
    f = np.zeros((n, 24, 24), np.float32)
    f[1:9, 3:10, 3:10] = 1.0  # structure 1, slices 1..8
    f[4:11, 14:21, 12:20] = 1.0  # structure 2, slices 4..10
    return f


PROMPTS = [Box(3, 3, 10, 10, index=5, label=1), Box(12, 14, 20, 21, index=7, label=2)]


def _record(model, frames, **kw):
    seen = []
    res = propagate_case(
        model,
        frames,
        PROMPTS,
        PropagationOptions(**kw),
        on_slice=lambda lab, i, m: seen.append((lab, i, m.copy())),
    )
    return res, seen


@pytest.mark.parametrize("mode", ["volume", "video"])
@pytest.mark.parametrize("share", [True, False])
def test_masks_unchanged_and_every_slice_reported(mode, share):
    model = ThresholdPromptModel()
    frames = _frames()
    plain = propagate_case(model, frames, PROMPTS, PropagationOptions(mode=mode, share=share))
    res, seen = _record(model, frames, mode=mode, share=share)
    np.testing.assert_array_equal(res.labels, plain.labels)
    for lab in plain.probabilities:
        np.testing.assert_array_equal(res.probabilities[lab], plain.probabilities[lab])
    for box in PROMPTS:
        mine = [(i, m) for lab, i, m in seen if lab == box.label]
        assert mine[0][0] == box.index  # the prompted slice first
        visited = set(range(box.index, 11)) | (
            set(range(box.index + 1)) if mode == "volume" else set()
        )
        reported = {i for i, _ in mine}
        prob = res.probabilities[box.label]
        assert reported <= visited and len(reported) >= 4
        for i in visited - reported:  # after a stop: not computed, background
            assert not prob[i].any()
        for i, m in mine:
            assert m.dtype == bool and m.shape == (24, 24)
            if i != box.index:  # the key slice is the union of both directions
                np.testing.assert_array_equal(m, prob[i] > 0.5)


def test_builtin_model_reports_each_step_as_it_is_computed():
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel

    model = BuiltinPromptModel(device="cpu")
    frames = np.zeros((7, 32, 32), np.float32)
    frames[1:6, 8:20, 8:20] = 0.8
    box = [Box(8, 8, 20, 20, index=3, label=1)]
    plain = propagate_case(model, frames, box)
    events = []
    res = propagate_case(
        model,
        frames,
        box,
        progress=lambda d, t: events.append(("step", d)),
        on_slice=lambda lab, i, m: events.append(("slice", i)),
    )
    np.testing.assert_array_equal(res.labels, plain.labels)
    np.testing.assert_array_equal(res.probabilities[1], plain.probabilities[1])
    # the key slice is reported before the first step is counted, and every slice
    # before the step that computed it: reports are interleaved with the walk
    assert events[0] == ("slice", 3) and events[1] == ("step", 1)
    slices = [k for k, (kind, _) in enumerate(events) if kind == "slice"]
    steps = [k for k, (kind, _) in enumerate(events) if kind == "step"]
    assert len(slices) >= 4 and slices[1] < steps[-1]
