import dataclasses

import numpy as np
import pytest

from napari_segeval.attacks import AttackConfig, PromptTarget, attack_case, robustness_summary
from napari_segeval.attacks.run import condition_name
from napari_segeval.models.threshold import ThresholdPromptModel
from napari_segeval.phantoms.ct import make_ct_case
from napari_segeval.prompts.from_labels import boxes_from_labels


@pytest.fixture(scope="module")
def target():
    case = make_ct_case(11, shape=(8, 36, 36))
    return PromptTarget(ThresholdPromptModel(), case, boxes_from_labels(case.labels, [1, 2]))


def test_same_seed_same_outputs_end_to_end(target):
    cfg = AttackConfig("pgd", eps=0.08, steps=3, seed=5)
    a, b = attack_case(target, cfg), attack_case(target, cfg)
    assert np.array_equal(a.perturbed_image, b.perturbed_image)
    assert np.array_equal(a.attacked_prediction, b.attacked_prediction)
    assert [r["dice"] for r in a.attacked_rows] == [r["dice"] for r in b.attacked_rows]
    assert a.history == b.history
    c = attack_case(target, dataclasses.replace(cfg, seed=6))
    assert not np.array_equal(a.perturbation, c.perturbation)


def test_result_records_budget_norms_and_parameters(target):
    res = attack_case(target, AttackConfig("apgd-ce", eps=0.05, steps=4), clamp=True)
    assert res.budget.eps_normalized == 0.05 and res.budget.eps_raw == pytest.approx(20.0)
    assert res.perturbation_norm["normalized"] <= 0.05
    assert res.perturbation_norm["raw"] == pytest.approx(np.abs(res.perturbation).max())
    assert res.params["attack"]["clamp"] == [0.0, 1.0]
    assert res.params["n_forward"] == 5 and res.params["n_backward"] == 4
    assert np.allclose(res.perturbed_image, target.case.image.astype(np.float32) + res.perturbation)
    recs = res.dice_records("case7")
    assert {r["condition"] for r in recs} == {"apgd-ce-linf eps=0.05 steps=4"}
    assert [r["label"] for r in recs] == [1, 2]
    summary = robustness_summary(recs)
    assert summary["cases"][0]["case"] == "case7"


def test_condition_names():
    assert (
        condition_name(AttackConfig("pgd", eps=0.05, steps=10).to_dict())
        == "pgd-linf eps=0.05 steps=10"
    )
    assert (
        condition_name(AttackConfig("noise-gaussian", eps=0.2, norm="l2").to_dict())
        == "noise-gaussian-l2 eps=0.2"
    )
