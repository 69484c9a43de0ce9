import math
from itertools import pairwise

import pytest
import torch

from napari_segeval.attacks import AttackConfig, run_attack
from napari_segeval.attacks._problem import per_case_norm
from napari_segeval.attacks.apgd import ALPHA, RHO, apgd_checkpoints


def _reference_checkpoints(n_iter):
    """p_0 = 0, p_1 = 0.22, p_{j+1} = p_j + max(p_j - p_{j-1} - 0.03, 0.06); w_j = ceil(p_j N)."""
    p = [0.0, 0.22]
    while p[-1] <= 1:
        p.append(p[-1] + max(p[-1] - p[-2] - 0.03, 0.06))
    return sorted({math.ceil(round(q * n_iter, 6)) for q in p[1:]} & set(range(1, n_iter)))


def test_checkpoints_follow_the_recurrence():
    assert apgd_checkpoints(100) == [22, 41, 57, 70, 80, 87, 93, 99]
    for n in (1, 2, 5, 10, 20, 37, 50, 100, 250):
        assert apgd_checkpoints(n) == _reference_checkpoints(n)
    assert ALPHA == 0.75 and RHO == 0.75


class Monotone(torch.nn.Module):
    """Logits (0, x): with target 0 the per-voxel CE softplus(x) increases with every x."""

    def forward(self, x):
        return torch.stack([torch.zeros_like(x), x], dim=1).flatten(2)


class Wavy(torch.nn.Module):
    """Logits (0, sin(3 x) + 0.3 x): the loss goes up and down along a sign-ascent path."""

    def forward(self, x):
        return torch.stack([torch.zeros_like(x), torch.sin(3 * x) + 0.3 * x], dim=1).flatten(2)


def _target(x):
    return torch.zeros(x.shape[0], x[0].numel(), dtype=torch.long)


def _step_sizes(out, restart=0):
    return [h["step_size"] for h in out.history if h["restart"] == restart]


def test_step_size_halves_at_every_checkpoint_once_the_loss_is_stuck():
    x = torch.zeros(2, 8)
    eps, n = 0.5, 30
    out = run_attack(
        Monotone(), x, _target(x), AttackConfig("apgd-ce", eps=eps, steps=n, random_start=False)
    )
    # x_1 = P(2 eps) = eps: the loss never improves again, so every checkpoint halves
    expected, eta = [], 2 * eps
    cks = apgd_checkpoints(n)
    for k in range(n + 1):
        if k in cks:
            eta /= 2
        expected.append([eta, eta])
    assert _step_sizes(out) == expected
    assert torch.allclose(out.delta, torch.full_like(x, eps))


def test_step_size_is_kept_while_the_loss_keeps_improving():
    x = torch.zeros(1, 8)
    out = run_attack(
        Monotone(),
        x,
        _target(x),
        AttackConfig("apgd-ce", eps=1.0, steps=20, step_size=0.01, random_start=False),
    )
    assert all(s == [pytest.approx(0.01)] for s in _step_sizes(out))
    losses = [h["loss"][0] for h in out.history]
    assert all(b > a for a, b in pairwise(losses))


def _reference_schedule(losses, eta0, n_iter):
    """Step size after each iterate, from the definition, given f(x_0), ..., f(x_N)."""
    cks = set(_reference_checkpoints(n_iter))
    eta, f_prev, best = eta0, losses[0], losses[0]
    succ, last_ck, best_at_ck, reduced_at_ck = 0, 0, losses[0], False
    out = [eta]
    for k in range(1, n_iter + 1):
        f = losses[k]
        succ += f > f_prev
        f_prev = f
        best = max(best, f)
        if k in cks:
            cond1 = succ < RHO * (k - last_ck)
            cond2 = (not reduced_at_ck) and best <= best_at_ck
            reduced_at_ck = cond1 or cond2
            if reduced_at_ck:
                eta /= 2
                f_prev = best  # restart from the best point
            best_at_ck, succ, last_ck = best, 0, k
        out.append(eta)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_schedule_matches_the_definition_on_a_toy_function(seed, norm):
    x = torch.randn(3, 16, generator=torch.Generator().manual_seed(seed))
    n, eps = 40, (0.7 if norm == "linf" else 2.0)
    cfg = AttackConfig("apgd-ce", eps=eps, norm=norm, steps=n, restarts=2, seed=seed)
    out = run_attack(Wavy(), x, _target(x), cfg)
    for r in range(2):
        rows = [h for h in out.history if h["restart"] == r]
        for case in range(3):
            losses = [h["loss"][case] for h in rows]
            got = [h["step_size"][case] for h in rows]
            assert got == pytest.approx(_reference_schedule(losses, 2 * eps, n))
    assert (per_case_norm(out.delta.double(), norm) <= eps).all()
    halvings = [h["step_size"][0] for h in out.history]
    assert min(halvings) < 2 * eps  # the toy does trigger reductions


def test_apgd_dlr_and_restarts_keep_the_lowest_dice(toy):
    net, x, target = toy
    out = run_attack(net, x, target, AttackConfig("apgd-dlr", eps=0.3, steps=10, restarts=3))
    dice = torch.tensor([h["dice"] for h in out.history])
    assert torch.allclose(out.dice, dice.min(dim=0).values)
    assert out.n_forward == 33 and out.n_backward == 30
