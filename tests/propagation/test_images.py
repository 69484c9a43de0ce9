"""Propagation from raw images of every kind: a 2D image is a one-frame video."""

from __future__ import annotations

import numpy as np
import pytest

from napari_segeval._errors import InvalidPromptError
from napari_segeval.io import Case, Geometry
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.phantoms.images2d import make_polyp_image, make_skin_image
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.from_labels import boxes_from_labels
from napari_segeval.propagation import (
    PropagationOptions,
    promptable_kind,
    propagate_case,
    propagate_image,
    propagation_mode,
)
from napari_segeval.propagation.images import as_frames


@pytest.mark.parametrize("make", [make_skin_image, make_polyp_image])
def test_2d_case_equals_one_frame_video_on_the_2d_grid(make):
    case = make(3)
    model = ThresholdPromptModel()
    boxes = boxes_from_labels(case.labels)
    assert boxes and all(b.index == 0 for b in boxes)
    res = propagate_image(model, case, boxes)
    # the same work spelled out: preprocess a one-frame stack, propagate forward
    frames = model.preprocess(np.asarray(case.image)[None], case.modality, None)
    ref = propagate_case(model, frames, boxes, PropagationOptions(mode="video"))
    assert res.labels.shape == case.labels.shape
    np.testing.assert_array_equal(res.labels, ref.labels[0])
    for lab, prob in res.probabilities.items():
        assert prob.shape == case.labels.shape
        np.testing.assert_array_equal(prob, ref.probabilities[lab][0])
    assert res.params["kind"] == "image" and res.params["mode"] == "video"


def test_array_with_kind_matches_case_and_keeps_grad():
    case = make_skin_image(1)
    boxes = boxes_from_labels(case.labels)
    model = ThresholdPromptModel()
    from_case = propagate_image(model, case, boxes)
    from_array = propagate_image(model, case.image, boxes, kind="image", modality=case.modality)
    np.testing.assert_array_equal(from_case.labels, from_array.labels)
    graded = propagate_image(model, case, boxes, options=PropagationOptions(grad=True))
    assert tuple(graded.tensors[1].shape) == case.labels.shape


def test_volume_and_video_cases_are_unchanged():
    vol = np.zeros((5, 12, 12), np.float32)
    vol[:, 3:8, 4:9] = 1000.0
    box = Box(3, 4, 8, 9, index=2, label=1)
    model = ThresholdPromptModel()
    for axes, mode in (("zyx", "volume"), ("tyx", "video")):
        case = Case(vol, Geometry.identity(3), axes=axes, modality="other")
        res = propagate_image(model, case, [box])
        ref = propagate_case(
            model, model.preprocess(vol, "other", None), [box], PropagationOptions(mode=mode)
        )
        np.testing.assert_array_equal(res.labels, ref.labels)
        assert res.params["mode"] == mode
    # video: frames before the prompted one stay background, volume: both sides filled
    assert not propagate_image(model, vol, [box], kind="video").labels[:2].any()
    assert propagate_image(model, vol, [box], kind="volume").labels[:2].all(axis=0).any()


def test_refusals():
    model = ThresholdPromptModel()
    img = np.zeros((8, 8), np.float32)
    with pytest.raises(InvalidPromptError, match="frame 2, expected 0"):
        propagate_image(model, img, [Box(1, 1, 4, 4, index=2)], kind="image")
    with pytest.raises(ValueError, match="needs kind="):
        propagate_image(model, img, [Box(1, 1, 4, 4)])
    with pytest.raises(TypeError, match="mode"):
        propagate_image(model, img, [Box(1, 1, 4, 4)], kind="image", mode="volume")
    with pytest.raises(ValueError, match="kind must be one of"):
        as_frames(img, "slice")
    g3 = Geometry.identity(3)
    with pytest.raises(ValueError, match="not a multi-channel volume"):
        promptable_kind(Case(np.zeros((2, 3, 4, 5), np.float32), g3, axes="czyx"))
    with pytest.raises(ValueError, match="not a time series of volumes"):
        promptable_kind(Case(np.zeros((2, 3, 4, 5), np.float32), Geometry.identity(4), axes="tzyx"))


def test_kind_helpers():
    shapes = {
        "zyx": (2, 4, 5),
        "tyx": (2, 4, 5),
        "tyxc": (2, 4, 5, 3),
        "yx": (4, 5),
        "yxc": (4, 5, 3),
    }
    cases = [
        Case(np.zeros(shape), Geometry.identity(3 if len(axes.strip("c")) == 3 else 2), axes=axes)
        for axes, shape in shapes.items()
    ]
    assert [promptable_kind(c) for c in cases] == ["volume", "video", "video", "image", "image"]
    assert [propagation_mode(k) for k in ("volume", "video", "image")] == [
        "volume",
        "video",
        "video",
    ]
    rgb = np.zeros((4, 5, 3))
    assert as_frames(rgb, "image").shape == (1, 4, 5, 3)
    assert as_frames(rgb, "volume") is rgb
