"""Propagation options that select MedSAM2's way: connectivity, logit decision, per-structure masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from napari_segeval.models.base import Capabilities, PromptableModel
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.models.walk import WALK_DEFAULTS, WalkOutput
from napari_segeval.prompts.box import Box
from napari_segeval.propagation import PropagationOptions, propagate_case
from napari_segeval.propagation.masks import largest_component, merge_structures


def _diagonal_frames() -> np.ndarray:
    """Two bright blocks touching only along a slice-to-slice diagonal edge."""
    f = np.zeros((4, 12, 12), np.float32)
    f[:2, 2:6, 2:6] = 1.0  # block A on slices 0-1
    f[2:, 6:10, 6:10] = 1.0  # block B on slices 2-3, diagonal neighbour of A
    return f


def test_connectivity_6_vs_26_on_a_diagonal_contact():
    mask = _diagonal_frames() > 0.5
    assert int(largest_component(mask).sum()) == 32  # one block (6-connected: apart)
    assert int(largest_component(mask, 26).sum()) == 64  # both (corner/edge contact)
    assert int(largest_component(mask, 18).sum()) == 32  # they touch at a corner only
    with pytest.raises(ValueError, match="connectivity"):
        largest_component(mask, 8)


def test_propagate_case_connectivity_option_and_record():
    probs = {1: _diagonal_frames()}
    six = merge_structures(probs) == 1
    full = merge_structures(probs, connectivity=26) == 1
    assert six.sum() == 32 and full.sum() == 64
    frames = np.ones((3, 8, 8), np.float32)
    res = propagate_case(
        ThresholdPromptModel(),
        frames,
        [Box(2, 2, 5, 5, index=1)],
        PropagationOptions(connectivity=26),
    )
    assert res.params["connectivity"] == 26
    assert (
        propagate_case(ThresholdPromptModel(), frames, [Box(2, 2, 5, 5, index=1)]).params[
            "connectivity"
        ]
        == 6
    )


class _LogitModel(PromptableModel):
    """Returns fixed logits: a tiny positive logit whose float32 sigmoid is exactly 0.5."""

    name = "fixed-logits"
    capabilities = Capabilities()
    device = torch.device("cpu")

    def __init__(self, logit: float) -> None:
        self.logit = logit

    def _seq(self, frames, walk):
        n = len(walk.frames(int(frames.shape[0])))
        out = torch.full((n, *frames.shape[1:3]), -5.0)
        out[:, 1:3, 1:3] = self.logit
        return out

    def walk_logits(self, frames, walks, options=WALK_DEFAULTS):
        n = int(frames.shape[0])
        seqs = [self._seq(frames, w) for w in walks]
        if options.crops:
            return [
                WalkOutput.from_full(w.frames(n), s, float("-inf")) for w, s in zip(walks, seqs)
            ]
        return seqs

    def propagate_walks(self, frames, walks, options=WALK_DEFAULTS):
        outs = self.walk_logits(frames, walks, options)
        if options.crops:
            return [o.map(torch.sigmoid, 0.0) for o in outs]
        return [torch.sigmoid(x) for x in outs]


def test_logit_decision_differs_only_where_sigmoid_rounds_to_half():
    frames = np.zeros((3, 4, 4), np.float32)
    box = [Box(1, 1, 3, 3, index=1)]
    tiny = _LogitModel(1e-9)
    assert torch.sigmoid(torch.tensor(1e-9)).item() == 0.5
    by_prob = propagate_case(tiny, frames, box, PropagationOptions(stop_when_empty=False))
    by_logit = propagate_case(
        tiny, frames, box, PropagationOptions(decision="logit", stop_when_empty=False)
    )
    assert by_prob.labels.sum() == 0
    assert by_logit.labels.sum() == 3 * 4 and by_logit.params["decision"] == "logit"
    clear = _LogitModel(2.0)
    a = propagate_case(clear, frames, box, PropagationOptions(stop_when_empty=False))
    b = propagate_case(
        clear, frames, box, PropagationOptions(decision="logit", stop_when_empty=False)
    )
    assert np.array_equal(a.labels, b.labels)
    np.testing.assert_allclose(a.probabilities[1], b.probabilities[1])
    with pytest.raises(ValueError, match="decision"):
        propagate_case(clear, frames, box, PropagationOptions(decision="sigmoid"))


def test_logit_decision_without_backend_logits_matches_probability():
    f = np.zeros((5, 10, 10), np.float32)
    f[:, 2:7, 2:7] = 1.0
    box = [Box(2, 2, 7, 7, index=2)]
    a = propagate_case(ThresholdPromptModel(), f, box)
    b = propagate_case(ThresholdPromptModel(), f, box, PropagationOptions(decision="logit"))
    assert np.array_equal(a.labels, b.labels)
    np.testing.assert_allclose(a.probabilities[1], b.probabilities[1], atol=1e-6)


def test_video_logit_frames_before_the_prompt_are_background():
    frames = np.zeros((4, 4, 4), np.float32)
    res = propagate_case(
        _LogitModel(3.0),
        frames,
        [Box(1, 1, 3, 3, index=2)],
        PropagationOptions(mode="video", decision="logit"),
    )
    assert res.labels[:2].sum() == 0 and res.labels[2:].any(axis=(1, 2)).all()
    assert res.probabilities[1][:2].max() == 0.0


def test_per_structure_masks_are_unmerged():
    f = np.zeros((3, 12, 12), np.float32)
    f[:, 2:10, 2:10] = 1.0
    boxes = [Box(2, 2, 10, 10, index=1, label=1), Box(4, 4, 8, 8, index=1, label=2)]
    for share in (True, False):
        res = propagate_case(
            ThresholdPromptModel(), f, boxes, PropagationOptions(share=share, connectivity=26)
        )
        both = res.masks[1] & res.masks[2]
        assert both.any()  # the overlap is in both masks ...
        assert not ((res.labels == 1) & (res.labels == 2)).any()  # ... the label map picks one
        assert np.array_equal(res.masks[1], res.probabilities[1] > 0.5)


def test_stop_when_empty_is_passed_to_the_backend_and_recorded():
    seen = []

    class Spy(_LogitModel):
        def walk_logits(self, frames, walks, options=WALK_DEFAULTS):
            seen.append(options.stop_when_empty)
            return super().walk_logits(frames, walks, options)

    frames = np.zeros((3, 4, 4), np.float32)
    for flag in (True, False):
        res = propagate_case(
            Spy(2.0),
            frames,
            [Box(1, 1, 3, 3, index=1)],
            PropagationOptions(decision="logit", stop_when_empty=flag),
        )
        assert res.params["stop_when_empty"] is flag
    assert seen == [True, False]
