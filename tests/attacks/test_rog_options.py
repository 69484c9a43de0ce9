"""The options the ``rog`` preset needs: APGD checkpoints, PGD max-loss, gating, DLR, labels."""

import math

import pytest
import torch

from napari_segeval._errors import SegEvalError
from napari_segeval.attacks import (
    AttackConfig,
    AttackNotApplicable,
    attack_case,
    condition_name,
    not_applicable,
    run_attack,
)
from napari_segeval.attacks.apgd import apgd_checkpoints
from napari_segeval.attacks.losses import case_dice, cross_entropy

from .test_apgd import Monotone, _reference_checkpoints, _step_sizes, _target
from .test_fab import Linear


def _rog_reference(n_iter):
    """ROG's ``APGDAttack.attack_single_run`` counters replayed: the iterations it checks after."""
    n_iter_2 = max(int(0.22 * n_iter), 1)
    n_iter_min = max(int(0.06 * n_iter), 1)
    size_decr = max(int(0.03 * n_iter), 1)
    k, counter3, checks = n_iter_2 + 0, 0, []
    for i in range(n_iter):
        counter3 += 1
        if counter3 == k:
            checks.append(i + 1)
            counter3 = 0
            k = max(k - size_decr, n_iter_min)
    return [c for c in checks if c < n_iter]  # a check after the last step changes nothing


def _paper_reference(n_iter):
    """w_j = ceil(p_j N), p_0 = 0, p_1 = 0.22, p_{j+1} = p_j + max(p_j - p_{j-1} - 0.03, 0.06)."""
    p = [0.0, 0.22]
    while p[-1] <= 1:
        p.append(p[-1] + max(p[-1] - p[-2] - 0.03, 0.06))
    return sorted({math.ceil(round(q * n_iter, 6)) for q in p[1:]} & set(range(1, n_iter)))


def test_both_checkpoint_schedules_equal_their_definitions():
    known = {
        5: ([2, 3, 4], [1, 2, 3, 4]),
        10: ([3, 5, 6, 7, 8, 9], [2, 3, 4, 5, 6, 7, 8, 9]),
        100: ([22, 41, 57, 70, 80, 87, 93, 99], [22, 41, 57, 70, 80, 87, 93, 99]),
    }
    for n, (paper, rog) in known.items():
        assert apgd_checkpoints(n) == apgd_checkpoints(n, "paper") == _paper_reference(n) == paper
        assert apgd_checkpoints(n, "rog") == _rog_reference(n) == rog
    for n in range(1, 130):
        assert apgd_checkpoints(n, "rog") == _rog_reference(n)
        assert apgd_checkpoints(n) == _reference_checkpoints(n)
    with pytest.raises(ValueError):
        apgd_checkpoints(10, "cosine")


@pytest.mark.parametrize("schedule", ["paper", "rog"])
def test_apgd_halves_the_step_at_the_schedule_checkpoints(schedule):
    x = torch.zeros(2, 8)
    eps, n = 0.5, 10
    out = run_attack(
        Monotone(),
        x,
        _target(x),
        AttackConfig("apgd-ce", eps=eps, steps=n, random_start=False, schedule=schedule),
    )
    # the loss is stuck from x_1 on, so every checkpoint halves
    expected, eta = [], 2 * eps
    for k in range(n + 1):
        if k in apgd_checkpoints(n, schedule):
            eta /= 2
        expected.append([eta, eta])
    assert _step_sizes(out) == expected
    assert AttackConfig("apgd-dlr", eps=0.1).schedule == "paper"


def test_pgd_select_loss_keeps_the_restart_with_the_highest_final_loss(toy):
    net, x, target = toy
    steps, restarts = 3, 4
    out = run_attack(
        net,
        x,
        target,
        AttackConfig(
            "pgd", eps=0.3, step_size=0.1, steps=steps, restarts=restarts, select="loss", seed=2
        ),
    )
    finals = [h for h in out.history if h["step"] == steps]
    assert [h["restart"] for h in finals] == list(range(restarts))
    loss = torch.tensor([h["loss"] for h in finals])  # (restarts, cases)
    dice = torch.tensor([h["dice"] for h in finals])
    best = loss.argmax(dim=0)
    assert torch.allclose(out.dice, dice[best, torch.arange(x.shape[0])])
    with torch.no_grad():
        assert torch.allclose(
            cross_entropy(out.logits, target), loss[best, torch.arange(x.shape[0])], atol=1e-6
        )
    assert AttackConfig("pgd", select="loss").to_dict()["select"] == "loss"
    with pytest.raises(ValueError, match="PGD option"):
        AttackConfig("apgd-ce", select="loss")


def _two_cases():
    """Case 0 sits 0.02 from the boundary (eps 1 breaks it), case 1 sits 5 away (robust)."""
    m = 64
    w = torch.ones(1, 1, m)
    fg = (torch.arange(m) % 3 == 0).reshape(1, 1, m).expand(2, 1, m)
    dist = torch.tensor([0.02, 5.0]).reshape(2, 1, 1).expand(2, 1, m)
    x = torch.where(fg, dist, -dist).contiguous()
    net = Linear(w)
    return net, x, net(x).argmax(1)


@pytest.mark.parametrize("attack", ["pgd", "apgd-ce", "noise-uniform", "square"])
def test_restarts_run_only_for_cases_still_robust(attack):
    net, x, target = _two_cases()
    base = {"eps": 1.0, "steps": 4, "seed": 1, "robust_threshold": 0.5}
    gated = run_attack(net, x, target, AttackConfig(attack, restarts=3, **base))
    once = run_attack(net, x, target, AttackConfig(attack, restarts=1, **base))
    assert gated.history[0]["restart"] == -1 and gated.info["clean_dice"] == [1.0, 1.0]
    assert gated.info["restarts_run"] == 3  # case 1 stays robust
    # case 0 broke in the first restart: later restarts no longer touch its perturbation
    assert once.dice[0] <= 0.5
    assert torch.equal(gated.delta[0], once.delta[0]) and gated.dice[0] == once.dice[0]


def test_no_restart_once_every_case_is_broken_and_none_when_clean_is_not_robust():
    net, x, target = _two_cases()
    x, target = x[:1], target[:1]
    cfg = AttackConfig("pgd", eps=1.0, steps=4, restarts=5, robust_threshold=0.5)
    out = run_attack(net, x, target, cfg)
    assert out.info["restarts_run"] == 1 and out.n_forward == 1 + 5
    done = []
    skip = run_attack(
        net,
        x,
        target,
        AttackConfig("apgd-ce", eps=1.0, steps=4, restarts=5, robust_threshold=1.0),
        progress=lambda d, t: done.append((d, t)),
    )
    assert skip.info["restarts_run"] == 0 and skip.n_forward == 1 and skip.n_backward == 0
    assert torch.equal(skip.delta, torch.zeros_like(x))
    assert done[-1] == (cfg.restarts * 5 + 1, cfg.restarts * 5 + 1)  # the count closes


def test_pgd_max_loss_gates_only_at_the_clean_input():
    net, x, target = _two_cases()
    cfg = {"eps": 1.0, "steps": 3, "restarts": 3, "select": "loss", "step_size": 1 / 3}
    out = run_attack(net, x, target, AttackConfig("pgd", robust_threshold=0.5, **cfg))
    assert out.info["restarts_run"] == 3 and out.dice[0] <= 0.5  # case 0 broke, all restarts ran
    free = run_attack(net, x, target, AttackConfig("pgd", **cfg))
    assert torch.equal(out.delta, free.delta)  # the same restarts, the same pick
    none = run_attack(net, x, target, AttackConfig("pgd", robust_threshold=1.0, **cfg))
    assert none.info["restarts_run"] == 0 and torch.equal(none.delta, torch.zeros_like(x))


def test_dlr_needs_three_classes():
    two = AttackConfig("apgd-dlr", eps=0.1)
    assert "at least 3 classes" in not_applicable(two, 2)
    assert not_applicable(two, 3) is None
    assert not_applicable(AttackConfig("pgd", eps=0.1, loss="dlr"), 2) is not None
    assert not_applicable(AttackConfig("apgd-ce", eps=0.1), 2) is None
    assert issubclass(AttackNotApplicable, SegEvalError)


@pytest.fixture
def prompt_target():
    from napari_segeval.attacks.promptable import PromptTarget
    from napari_segeval.models.threshold import ThresholdPromptModel
    from napari_segeval.phantoms.ct import make_ct_case
    from napari_segeval.prompts.from_labels import boxes_from_labels

    case = make_ct_case(3, shape=(8, 32, 32))
    return PromptTarget(ThresholdPromptModel(), case, boxes_from_labels(case.labels, [1]))


def test_attack_case_refuses_dlr_on_a_binary_target_and_checks_the_reference(prompt_target):
    with pytest.raises(AttackNotApplicable, match="the model has 2"):
        attack_case(prompt_target, AttackConfig("apgd-dlr", eps=0.05, steps=2))
    res = attack_case(prompt_target, AttackConfig("fgsm", eps=0.05), reference="prediction")
    assert res.params["reference"] == "clean prediction"
    assert (
        attack_case(prompt_target, AttackConfig("fgsm", eps=0.05), reference="labels").params[
            "reference"
        ]
        == "labels"
    )
    import dataclasses

    prompt_target.case = dataclasses.replace(prompt_target.case, labels=None)
    with pytest.raises(SegEvalError, match="has none"):
        attack_case(prompt_target, AttackConfig("fgsm", eps=0.05), reference="labels")
    with pytest.raises(ValueError):
        attack_case(prompt_target, AttackConfig("fgsm", eps=0.05), reference="gt")


@pytest.mark.parametrize("attack", ["square", "fab"])
def test_square_and_fab_attack_a_promptable_target(prompt_target, attack):
    res = attack_case(prompt_target, AttackConfig(attack, eps=0.2, steps=3), clamp=True)
    assert res.attacked_prediction.shape == prompt_target.case.labels.shape
    assert float(abs(res.perturbation_normalized).max()) <= 0.2
    info = res.params["info"]
    assert ("queries" in info) if attack == "square" else ("min_norm" in info)
    assert res.params["n_backward"] == (0 if attack == "square" else 3)


def test_condition_names_tell_variants_apart():
    def name(**kw):
        return condition_name(AttackConfig(**kw).to_dict())

    assert name(attack="apgd-ce", eps=0.1, steps=5) == "apgd-ce-linf eps=0.1 steps=5"
    assert (
        name(attack="apgd-ce", eps=0.1, steps=5, schedule="rog")
        == "apgd-ce-linf eps=0.1 steps=5 schedule=rog"
    )
    assert (
        name(attack="pgd", eps=0.1, steps=5, select="loss")
        == "pgd-linf eps=0.1 steps=5 select=loss"
    )
    assert (
        name(attack="square", eps=0.1, steps=5, schedule="absolute", loss="hard-dice")
        == "square-linf eps=0.1 steps=5 schedule=absolute loss=hard-dice"
    )
    assert name(attack="fab", eps=0.1, steps=5) == "fab-linf eps=0.1 steps=5"


def test_config_validation_of_the_new_options():
    for bad in (
        {"attack": "pgd", "schedule": "rog"},
        {"attack": "apgd-ce", "schedule": "cosine"},
        {"attack": "pgd", "schedule": "nope"},
        {"attack": "pgd", "select": "max"},
        {"attack": "square", "p_init": 0.0},
        {"attack": "fab", "target_ranks": 0},
    ):
        with pytest.raises(ValueError):
            AttackConfig(eps=0.1, **bad)
    assert AttackConfig("pgd").schedule == "constant"
    assert AttackConfig("fgsm").schedule == "constant"
    assert AttackConfig("pgd", robust_threshold=1).robust_threshold == 1.0


def test_lowest_dice_rule_is_unchanged_by_the_candidate_bookkeeping(toy):
    net, x, target = toy
    out = run_attack(net, x, target, AttackConfig("pgd", eps=0.3, steps=4, restarts=2))
    per_iter = torch.tensor([h["dice"] for h in out.history])
    assert torch.allclose(out.dice, per_iter.min(dim=0).values)
    with torch.no_grad():
        assert torch.allclose(case_dice(net(x + out.delta), target), out.dice)
