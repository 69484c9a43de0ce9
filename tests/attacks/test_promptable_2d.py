"""Promptable attacks on a single 2D image: a one-frame video, outputs on the 2D grid."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from napari_segeval._errors import InvalidPromptError
from napari_segeval.attacks import AttackConfig, PromptTarget, attack_case
from napari_segeval.io import Geometry
from napari_segeval.metrics import structure_table
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.phantoms.images2d import make_polyp_image, make_skin_image
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.from_labels import boxes_from_labels
from napari_segeval.propagation import propagate_image


def _model(name):
    if name == "threshold":
        return ThresholdPromptModel()
    from napari_segeval.models.builtin_prompt import BuiltinPromptModel

    return BuiltinPromptModel(device="cpu")


def _as_video(case):
    """The one-frame video the widget used to build by hand (the reference here)."""
    return replace(
        case,
        image=np.asarray(case.image)[None],
        labels=case.labels[None],
        geometry=Geometry.identity(3, (1.0, *case.spacing)),
        axes="t" + case.axes,
    )


@pytest.mark.parametrize("model_name", ["threshold", "builtin"])
@pytest.mark.parametrize("make", [make_skin_image, make_polyp_image])
def test_2d_attack_equals_the_one_frame_video_on_the_2d_grid(model_name, make):
    case = make(2, shape=(64, 80))
    model = _model(model_name)
    boxes = boxes_from_labels(case.labels)
    config = AttackConfig("fgsm", eps=0.05)
    target = PromptTarget(model, case, boxes)
    assert target.mode == "video" and tuple(target.x.shape[:2]) == (1, 1)
    assert target.reference_target().shape == (1, 1, *case.labels.shape)
    res = attack_case(target, config, clamp=True)
    video = attack_case(
        PromptTarget(model, _as_video(case), boxes, mode="video"), config, clamp=True
    )
    for name in ("clean_prediction", "attacked_prediction", "perturbation", "perturbed_image"):
        got, ref = getattr(res, name), getattr(video, name)[0]
        assert got.shape == ref.shape
        assert got.shape[:2] == case.labels.shape
        np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(res.clean_prediction, propagate_image(model, case, boxes).labels)
    # rows use the 2D grid and spacing
    names = {b.label: case.structure_name(b.label) for b in boxes}
    np.testing.assert_equal(
        res.clean_rows,
        structure_table(
            case.labels, res.clean_prediction, case.spacing, structures=names, surface=False
        ),
    )
    pert = res.perturbation if res.perturbation.ndim == 3 else res.perturbation[..., None]
    np.testing.assert_allclose(
        res.perturbed_image, np.asarray(case.image, np.float32) + pert, atol=1e-4
    )
    assert np.abs(res.perturbation).max() <= res.budget.eps_raw * (1 + 1e-6)
    assert res.params["target"]["input"] == "image"


def test_2d_refusals():
    case = make_skin_image(1, shape=(64, 80))
    with pytest.raises(ValueError, match="one-frame video"):
        PromptTarget(ThresholdPromptModel(), case, boxes_from_labels(case.labels), mode="volume")
    with pytest.raises(InvalidPromptError, match="expected 0"):
        PromptTarget(ThresholdPromptModel(), case, [Box(2, 2, 9, 9, index=1)])
