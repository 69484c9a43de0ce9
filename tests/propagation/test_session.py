"""Correction rounds: a session re-propagates only what changed and equals propagate_case."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import InvalidLabelsError, InvalidPromptError
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import Point
from napari_segeval.propagation import PropagationOptions, PropagationSession, propagate_case


class Counting(ThresholdPromptModel):
    """Threshold backend that counts its walks per structure."""

    def __init__(self):
        super().__init__()
        self.walks = []

    def propagate_walks(self, frames, walks, *options):
        self.walks.extend(w.label for w in walks)
        return super().propagate_walks(frames, walks, *options)


def _frames():
    f = np.zeros((8, 16, 16), np.float32)
    f[:, 2:7, 2:7] = 1.0
    f[:, 9:14, 9:14] = 1.0
    f[4, 9:14, 12:14] = 0.0
    return f


def _same(a, b):
    np.testing.assert_array_equal(a.labels, b.labels)
    assert sorted(a.probabilities) == sorted(b.probabilities)
    for lab in a.probabilities:
        np.testing.assert_array_equal(a.probabilities[lab], b.probabilities[lab])
        np.testing.assert_array_equal(a.masks[lab], b.masks[lab])


def test_a_correction_repropagates_one_structure_and_equals_a_fresh_run():
    model = Counting()
    s = PropagationSession(model, _frames())
    s.set_prompts([Box(2, 2, 7, 7, index=3, label=1), Box(9, 9, 14, 14, index=3, label=2)])
    first = s.propagate()
    assert sorted(model.walks) == [1, 1, 2, 2] and s.stale() == []
    model.walks.clear()
    s.add(Point(10, 12, index=6, label=2, positive=False))
    corrected = s.propagate()
    assert model.walks == [2, 2] and s.last_propagated == [2]
    _same(corrected, propagate_case(ThresholdPromptModel(), _frames(), s.prompts))
    assert not np.array_equal(first.labels, corrected.labels)
    s.undo(2)
    _same(s.propagate(), first)
    s.remove(1)
    only = s.propagate()
    assert sorted(only.probabilities) == [2] and not (only.labels == 1).any()
    assert s.propagate(labels=[2]) is s.result and s.last_propagated == [2]


def test_bad_prompt_leaves_the_session_as_it_was():
    s = PropagationSession(ThresholdPromptModel(), _frames())
    s.add(Box(2, 2, 7, 7, index=3, label=1))
    good = s.propagate()
    s.add(Point(40, 4, index=3, label=1))
    with pytest.raises(InvalidPromptError, match="outside"):
        s.propagate()
    assert s.result is good and s.structures[1] is good.structures[1]
    s.undo(1)
    assert s.stale() == []


def test_a_structure_the_session_does_not_have_is_one_line():
    s = PropagationSession(ThresholdPromptModel(), _frames())
    s.add(Box(2, 2, 7, 7, index=3, label=1))
    s.propagate()
    with pytest.raises(InvalidPromptError, match="^structure 4 has no prompts to undo$"):
        s.undo(4)
    with pytest.raises(InvalidPromptError, match="^structure 4 has no prompts$"):
        s.propagate(labels=[1, 4])
    assert s.last_propagated == [1]
    s.undo(1)  # its last prompt: the structure goes; a second undo has nothing left
    with pytest.raises(InvalidPromptError, match="no prompts to undo"):
        s.undo(1)


def test_two_d_image_and_video_sessions():
    img = np.zeros((20, 24, 3), np.uint8)
    img[4:12, 5:14] = 220
    s = PropagationSession.from_image(
        ThresholdPromptModel(), img, kind="image", modality="endoscopy"
    )
    s.add(Point(8, 9, index=0))
    res = s.propagate()
    assert res.labels.shape == (20, 24) and res.probabilities[1].shape == (20, 24)
    assert int((res.labels == 1).sum()) == 8 * 9 and res.params["kind"] == "image"
    s.add(Point(3, 3, index=1))
    with pytest.raises(
        InvalidPromptError,
        match=r"^a 2D image has one frame: \+ point "
        r"\(y=3, x=3\) of label 1 is on frame 1, expected 0$",
    ):
        s.propagate()
    video = PropagationSession(ThresholdPromptModel(), _frames(), kind="video")
    video.add(Box(2, 2, 7, 7, index=5, label=1))
    assert not video.propagate().labels[:5].any() and video.options.mode == "video"


def test_no_gradients_in_a_session():
    with pytest.raises(ValueError, match="gradients"):
        PropagationSession(ThresholdPromptModel(), _frames(), PropagationOptions(grad=True))


def test_a_seeded_session_keeps_the_saved_masks_until_their_prompts_change():
    model = Counting()
    boxes = [Box(2, 2, 7, 7, index=3, label=1), Box(9, 9, 14, 14, index=3, label=2)]
    saved = propagate_case(ThresholdPromptModel(), _frames(), boxes).labels.copy()
    saved[0, 2:4, 2:4] = 0  # a hand edit the saved prediction carries
    s = PropagationSession(model, _frames())
    s.seed(saved, boxes)
    assert s.stale() == []
    np.testing.assert_array_equal(s.propagate().labels, saved)
    assert model.walks == [] and s.last_propagated == []
    s.add(Point(10, 12, index=6, label=2, positive=False))
    corrected = s.propagate()
    assert model.walks == [2, 2] and s.last_propagated == [2]
    fresh = propagate_case(ThresholdPromptModel(), _frames(), s.prompts)
    np.testing.assert_array_equal(corrected.labels == 2, fresh.labels == 2)
    np.testing.assert_array_equal(corrected.labels == 1, saved == 1)  # as saved, edit kept
    with pytest.raises(
        InvalidLabelsError,
        match=r"^the label map has shape \(3, 16, 16\), "
        r"the frames are \(8, 16, 16\)$",
    ):
        s.seed(saved[:3], boxes)


def test_a_re_propagated_structure_wins_what_it_claims_from_a_seeded_one():
    f = np.zeros((8, 16, 16), np.float32)
    f[:, 2:7, 2:7] = 1.0
    f[:, 2:7, 8:13] = 1.0  # column 7 is dark: the threshold model does not cross it
    saved = np.zeros((8, 16, 16), np.uint8)
    saved[:, 2:7, 2:9] = 1  # structure 1 was saved spilling over columns 7-8
    # (the nested-structure rule off: here neither structure lies inside the other)
    s = PropagationSession(ThresholdPromptModel(), f, PropagationOptions(nested_fraction=None))
    s.seed(saved, [Box(2, 2, 7, 7, index=3, label=1)])
    s.add(Box(2, 8, 7, 13, index=3, label=2))
    res = s.propagate()
    assert (res.labels[:, 2:7, 8:13] == 2).all() and (res.labels[:, 2:7, 2:8] == 1).all()
    image = PropagationSession(ThresholdPromptModel(), f[:1], kind="image")
    image.seed(saved[0], [Box(2, 2, 7, 7, index=0, label=1)])  # a 2D image's label map
    np.testing.assert_array_equal(image.propagate().labels, saved[0])


def test_a_removed_structure_is_stale_and_leaves_the_result():
    s = PropagationSession(ThresholdPromptModel(), _frames())
    s.set_prompts([Box(2, 2, 7, 7, index=3, label=1), Box(9, 9, 14, 14, index=3, label=2)])
    both = s.propagate()
    assert (both.labels == 1).any() and (both.labels == 2).any()
    s.remove(1)
    assert s.stale() == [1]
    if s.stale():  # the pattern the interactive protocol uses
        s.propagate()
    assert s.stale() == [] and s.last_propagated == []
    assert sorted(s.result.probabilities) == [2] and not (s.result.labels == 1).any()
    _same(s.result, propagate_case(ThresholdPromptModel(), _frames(), s.prompts))
    s.add(Point(4, 4, index=1, label=3))
    s.undo(3)
    assert s.stale() == []  # never propagated: nothing of it to drop
