import threading
from itertools import pairwise

import numpy as np
import pytest
import torch

from napari_segeval._cancel import Cancelled
from napari_segeval.attacks import ATTACKS, AttackConfig, run_attack
from napari_segeval.attacks._problem import per_case_norm
from napari_segeval.attacks.losses import case_dice

EPS = {"linf": 0.07, "l2": 1.3}  # not exact in float32: the bound must still hold


def _clean_dice(net, x, target):
    with torch.no_grad():
        return case_dice(net(x), target)


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_perturbation_never_exceeds_epsilon(toy, attack, norm):
    net, x, target = toy
    eps = EPS[norm]
    if ATTACKS[attack].linf_only and norm != "linf":
        with pytest.raises(ValueError, match="L-inf"):
            AttackConfig(attack, eps=eps, norm=norm)
        return
    cfg = AttackConfig(attack, eps=eps, norm=norm, steps=6, restarts=2, seed=3)
    out = run_attack(net, x, target, cfg)
    assert (per_case_norm(out.delta.double(), norm) <= eps).all()
    assert out.delta.shape == x.shape
    # the returned logits and Dice belong to x + delta
    with torch.no_grad():
        assert torch.allclose(net(x + out.delta), out.logits, atol=1e-5)
    assert torch.allclose(case_dice(out.logits, target), out.dice)


@pytest.mark.parametrize("attack", ["pgd", "apgd-ce", "noise-uniform"])
def test_clamp_keeps_inputs_in_the_valid_range(toy, attack):
    net, x, target = toy
    lo, hi = -0.5, 0.8
    xc = x.clamp(lo, hi)
    out = run_attack(net, xc, target, AttackConfig(attack, eps=0.3, steps=4, clamp=(lo, hi)))
    adv = xc + out.delta
    assert adv.min() >= lo - 1e-6 and adv.max() <= hi + 1e-6
    assert out.delta.abs().max() <= 0.3


def test_clamp_per_channel_keeps_each_channel_in_its_own_range():
    net = torch.nn.Conv2d(2, 3, 3, padding=1)
    x = torch.zeros(1, 2, 8, 8)
    target = torch.zeros(1, 8, 8, dtype=torch.long)
    ranges = ((-0.1, 0.2), (-1.0, 1.0))
    cfg = AttackConfig("pgd", eps=0.8, steps=3, clamp=ranges)
    assert cfg.clamp == ranges and cfg.to_dict()["clamp"] == [[-0.1, 0.2], [-1.0, 1.0]]
    out = run_attack(net, x, target, cfg)
    adv = x + out.delta
    for c, (lo, hi) in enumerate(ranges):
        assert adv[:, c].min() >= lo - 1e-6 and adv[:, c].max() <= hi + 1e-6
    assert float(out.delta[:, 1].abs().max()) > 0.2 + 1e-3  # channel 1 may go past 0.2
    with pytest.raises(ValueError, match="per-channel clamp ranges"):
        run_attack(net, x, target, AttackConfig("pgd", eps=0.1, clamp=((0, 1),) * 3))
    with pytest.raises(ValueError, match="empty"):
        AttackConfig("pgd", eps=0.1, clamp=((0, 1), (2, 1)))


def test_clamp_lets_voxels_outside_the_range_keep_their_clean_value(toy):
    net, x, target = toy
    out = run_attack(net, x, target, AttackConfig("pgd", eps=0.1, steps=3, clamp=(-0.1, 0.1)))
    adv = x + out.delta
    assert (adv >= torch.minimum(x, torch.tensor(-0.1)) - 1e-6).all()
    assert (adv <= torch.maximum(x, torch.tensor(0.1)) + 1e-6).all()


@pytest.mark.parametrize("attack", ["fgsm", "pgd", "apgd-ce", "apgd-dlr"])
def test_attacked_dice_not_above_clean(toy, attack):
    net, x, target = toy
    out = run_attack(net, x, target, AttackConfig(attack, eps=0.3, steps=8, random_start=False))
    clean = _clean_dice(net, x, target)
    assert (out.dice <= clean + 1e-7).all()
    assert out.dice.mean() < clean.mean()


def test_larger_epsilon_lowers_dice_on_average(toy):
    net, x, target = toy
    means = []
    for eps in (0.02, 0.1, 0.3, 0.8):
        means.append(
            float(run_attack(net, x, target, AttackConfig("pgd", eps=eps, steps=8)).dice.mean())
        )
    assert all(b <= a for a, b in pairwise(means)), means
    assert means[-1] < means[0] - 0.2


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_seeds_reproduce_results_exactly(toy, attack):
    net, x, target = toy
    cfg = {"eps": 0.2, "steps": 4, "restarts": 2}
    a = run_attack(net, x, target, AttackConfig(attack, seed=7, **cfg))
    b = run_attack(net, x, target, AttackConfig(attack, seed=7, **cfg))
    assert torch.equal(a.delta, b.delta) and torch.equal(a.logits, b.logits)
    assert a.history == b.history
    if attack not in ("fgsm", "fab"):  # FGSM has no randomness; FAB's first run starts clean
        c = run_attack(net, x, target, AttackConfig(attack, seed=8, **cfg))
        assert not torch.equal(a.delta, c.delta)


def test_pgd_costs_one_forward_and_one_backward_per_step(toy):
    net, x, target = toy
    calls = []

    def forward(t):
        calls.append(t.requires_grad)
        return net(t)

    done = []
    cfg = AttackConfig("pgd", eps=0.1, steps=5, restarts=2)
    out = run_attack(forward, x, target, cfg, progress=lambda d, t: done.append((d, t)))
    assert (out.n_forward, out.n_backward) == (12, 10) == (len(calls), sum(calls))
    assert done == [(i, ATTACKS["pgd"].evaluations(cfg, None)) for i in range(1, 13)]
    assert [h["step"] for h in out.history] == list(range(6)) * 2


def test_cancel_stops_the_attack(toy):
    net, x, target = toy
    ev = threading.Event()

    def progress(done, total):
        if done == 2:
            ev.set()

    with pytest.raises(Cancelled):
        run_attack(
            net, x, target, AttackConfig("pgd", eps=0.1, steps=10), progress=progress, cancel=ev
        )


def test_fgsm_linf_moves_every_voxel_with_a_gradient_by_eps(toy):
    net, x, target = toy
    out = run_attack(net, x, target, AttackConfig("fgsm", eps=0.05))
    mag = out.delta.abs()
    assert torch.allclose(mag[mag > 0], torch.full_like(mag[mag > 0], 0.05))
    assert (mag > 0).float().mean() > 0.9


def test_keep_best_returns_the_lowest_dice_iterate(toy):
    net, x, target = toy
    out = run_attack(net, x, target, AttackConfig("pgd", eps=0.3, steps=6, restarts=2))
    per_iter = np.array([h["dice"] for h in out.history])
    assert np.allclose(out.dice.numpy(), per_iter.min(axis=0))
    last = run_attack(
        net, x, target, AttackConfig("pgd", eps=0.3, steps=6, restarts=2, keep_best=False)
    )
    assert np.allclose(last.dice.numpy(), per_iter[-1])


@pytest.mark.parametrize("weighting", ["segpgd", "cospgd"])
@pytest.mark.parametrize("schedule", ["constant", "cosine", "step"])
def test_weighted_losses_and_schedules_attack(toy, weighting, schedule):
    net, x, target = toy
    out = run_attack(
        net,
        x,
        target,
        AttackConfig(
            "pgd", eps=0.3, steps=6, weighting=weighting, schedule=schedule, random_start=False
        ),
    )
    assert out.dice.mean() < _clean_dice(net, x, target).mean()


def test_config_validation_and_defaults():
    assert AttackConfig("pgd", eps=0.1, steps=10).effective_step_size == pytest.approx(0.025)
    assert AttackConfig("apgd-ce", eps=0.1).effective_step_size == pytest.approx(0.2)
    assert AttackConfig("apgd-dlr", eps=0.1, loss="ce").loss == "dlr"
    assert AttackConfig("fgsm", eps=0.1).to_dict()["step_size"] == pytest.approx(0.1)
    for bad in (
        {"attack": "cw"},
        {"norm": "l1"},
        {"eps": -1.0},
        {"steps": 0},
        {"loss": "dice", "weighting": "segpgd"},
        {"weighting": "x"},
        {"clamp": (1, 0)},
        {"schedule": "exp"},
    ):
        with pytest.raises(ValueError):
            AttackConfig(**{"eps": 0.1, **bad})


def test_gaussian_noise_uses_sigma_then_projects(toy):
    net, x, target = toy
    out = run_attack(net, x, target, AttackConfig("noise-gaussian", eps=10.0, sigma=0.01))
    assert 0.005 < float(out.delta.std()) < 0.02
    out = run_attack(net, x, target, AttackConfig("noise-gaussian", eps=0.01, sigma=1.0))
    assert float(out.delta.abs().max()) == pytest.approx(0.01)


def test_an_attack_is_one_registry_entry(toy, monkeypatch):
    """A new entry is taken by AttackConfig, dispatched by run_attack, counted by its entry."""
    from napari_segeval.attacks import Attack
    from napari_segeval.attacks.iterative import noise

    def flip(problem):  # the uniform-noise loop under another name
        return noise(problem, "uniform")

    entry = Attack(
        flip, lambda cfg, n: 5 * cfg.restarts, "test attack", linf_only=True, schedules=("a", "b")
    )
    monkeypatch.setitem(ATTACKS, "flip", entry)
    cfg = AttackConfig("flip", eps=0.1, restarts=2)
    assert cfg.schedule == "a" and entry.evaluations(cfg, None) == 10
    done = []
    out = run_attack(*toy, cfg, progress=lambda d, t: done.append(t))
    assert done and set(done) == {10} and out.n_forward == 2
    with pytest.raises(ValueError, match="L-inf norm only"):
        AttackConfig("flip", eps=0.1, norm="l2")
    with pytest.raises(ValueError, match="does not apply to flip"):
        AttackConfig("flip", eps=0.1, schedule="cosine")


def test_registry_entries_say_what_their_configs_check():
    assert list(ATTACKS) == [
        "fgsm",
        "pgd",
        "apgd-ce",
        "apgd-dlr",
        "square",
        "fab",
        "noise-gaussian",
        "noise-uniform",
    ]
    assert [n for n, a in ATTACKS.items() if a.linf_only] == ["square", "fab"]
    with pytest.raises(ValueError, match="only square takes it"):
        AttackConfig("pgd", eps=0.1, loss="hard-dice")
    with pytest.raises(ValueError, match="is a PGD option"):
        AttackConfig("apgd-ce", eps=0.1, select="loss")
    for bad in (-0.01, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=f"step_size must be finite and > 0, got {bad}"):
            AttackConfig("pgd", eps=0.1, step_size=bad)
    from napari_segeval.attacks import not_applicable

    assert not_applicable(AttackConfig("fab", eps=0.1), 1) == (
        "fab needs at least 2 classes; the model has 1"
    )


def test_no_import_circle_in_attacks_even_for_types():
    """Every import between attack modules (TYPE_CHECKING ones too) goes one way."""
    import ast
    from pathlib import Path

    import napari_segeval.attacks as pkg

    folder = Path(pkg.__file__).parent
    graph = {}
    for path in folder.glob("*.py"):
        if path.name == "__init__.py":
            continue
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                found |= {
                    n.rsplit(".", 1)[-1]
                    for n in names
                    if n.startswith("napari_segeval.attacks.") and n.count(".") == 2
                }
        graph[path.stem] = found - {path.stem}

    def reaches(start, goal, seen=()):
        return any(
            n == goal or (n not in seen and reaches(n, goal, (*seen, n)))
            for n in graph.get(start, ())
        )

    circles = sorted(m for m in graph if reaches(m, m))
    assert not circles, f"import circles through {circles}"
    assert "config" in graph["core"] and "registry" in graph["config"]
