"""FAB-T: the exact L-inf projection, minimal norms on a classifier with a known boundary."""

import numpy as np
import pytest
import torch

from napari_segeval.attacks import AttackConfig, run_attack
from napari_segeval.attacks._problem import per_case_norm
from napari_segeval.attacks.fab import project_to_hyperplane
from napari_segeval.attacks.losses import case_dice


class Linear(torch.nn.Module):
    """Per-voxel logits ``(0, w_i x_i)``, ``w_i > 0``: voxel i is foreground iff ``x_i > 0``.

    The L-inf distance of voxel i to its decision boundary is ``|x_i|``.
    """

    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, x):
        z = self.w * x
        return torch.stack([torch.zeros_like(z), z], dim=1).flatten(2)


def _linear_problem(distance, seed=0, m=300):
    gen = torch.Generator().manual_seed(seed)
    w = torch.rand(1, 1, m, generator=gen) + 0.5
    fg = torch.rand(2, 1, m, generator=gen) < 0.4
    if callable(distance):
        distance = distance(gen, (2, 1, m))
    x = torch.where(fg, distance, -distance).float()
    net = Linear(w)
    with torch.no_grad():
        target = net(x).argmax(1)
    return net, x, target, fg


def _oracle_min_norm(net, x, target, fg, thr=0.5):
    """Smallest L-inf norm breaking each case: flip every voxel nearer the boundary than it."""
    out = []
    for c in range(x.shape[0]):
        d = x[c : c + 1].abs()
        for r in np.sort(d.flatten().numpy()):
            moved = torch.where(fg[c : c + 1], d - r, -d + r)  # exactly on the boundary: background
            if float(case_dice(net(moved), target[c : c + 1])[0]) <= thr:
                out.append(float(r))
                break
    return out


def test_projection_matches_a_linear_programming_oracle():
    from scipy.optimize import linprog

    gen = torch.Generator().manual_seed(3)
    for trial in range(12):
        m = 7
        w = torch.randn(1, m, generator=gen, dtype=torch.float64)
        w[0, trial % m] = 0.0
        up = torch.rand(1, m, generator=gen, dtype=torch.float64) * 2
        down = torch.rand(1, m, generator=gen, dtype=torch.float64) * 2
        r = torch.randn(1, generator=gen, dtype=torch.float64) * (1 + 4 * (trial % 2))
        d = project_to_hyperplane(w, r, up, down)
        # min t  s.t.  -t <= d_i <= t,  -down <= d <= up,  <w, d> = r   (variables d, t)
        c = np.r_[np.zeros(m), 1.0]
        eye = np.eye(m)
        a_ub = np.block([[eye, -np.ones((m, 1))], [-eye, -np.ones((m, 1))]])
        bounds = [(-float(lo), float(hi)) for lo, hi in zip(down[0], up[0])] + [(0, None)]
        lp = linprog(
            c,
            A_ub=a_ub,
            b_ub=np.zeros(2 * m),
            A_eq=np.r_[w[0].numpy(), 0.0][None],
            b_eq=r.numpy(),
            bounds=bounds,
        )
        if lp.status == 0:
            assert float((w * d).sum()) == pytest.approx(float(r[0]), abs=1e-9)
            assert float(d.abs().max()) == pytest.approx(lp.fun, abs=1e-9)
            assert bool((d <= up + 1e-12).all() and (d >= -down - 1e-12).all())
        else:  # the box cannot reach the hyperplane: every coordinate moves fully towards it
            s = torch.sign(w * r)
            full = torch.where(s > 0, up, -down) * (s != 0)
            assert torch.allclose(d, full)


def test_projection_without_box_spreads_the_step_over_every_coordinate():
    w = torch.tensor([[2.0, -1.0, 0.0, 1.0]], dtype=torch.float64)
    d = project_to_hyperplane(w, torch.tensor([-2.0], dtype=torch.float64))
    assert d.tolist() == [[-0.5, 0.5, 0.0, -0.5]]


def test_fab_finds_the_known_minimal_norm_where_pgd_spends_the_whole_budget():
    a = 0.2
    net, x, target, _ = _linear_problem(torch.tensor(a))
    eps = 3 * a
    fab = run_attack(net, x, target, AttackConfig("fab", eps=eps, steps=10))
    pgd = run_attack(net, x, target, AttackConfig("pgd", eps=eps, steps=10))
    thr = 0.5  # half the clean Dice (1): FAB's default success threshold
    assert (fab.dice <= thr).all() and (pgd.dice <= thr).all()  # same success
    fab_norm = per_case_norm(fab.delta.double(), "linf")
    pgd_norm = per_case_norm(pgd.delta.double(), "linf")
    # every voxel sits at distance a from the boundary: a is the minimal norm
    assert ((fab_norm >= a) & (fab_norm <= 1.02 * a)).all(), fab_norm
    assert (fab_norm < 0.5 * pgd_norm).all()
    assert fab.info["min_norm"] == pytest.approx(fab_norm.tolist())
    assert fab.info["success_within_eps"] == [True, True]
    assert fab.info["success_threshold"] == [0.5, 0.5]


def test_fab_beats_pgd_and_never_beats_the_optimum_with_spread_distances():
    net, x, target, fg = _linear_problem(lambda g, s: torch.rand(s, generator=g) * 0.5 + 0.05, 1)
    eps = 1.0
    fab = run_attack(net, x, target, AttackConfig("fab", eps=eps, steps=20, restarts=3))
    pgd = run_attack(net, x, target, AttackConfig("pgd", eps=eps, steps=10))
    assert (fab.dice <= 0.5).all() and (pgd.dice <= 0.5).all()
    fab_norm = per_case_norm(fab.delta.double(), "linf")
    oracle = torch.tensor(_oracle_min_norm(net, x, target, fg), dtype=torch.float64)
    assert (fab_norm >= oracle - 1e-6).all()  # nothing breaks a case below the optimum
    assert (fab_norm < 1.25 * oracle).all(), (fab_norm, oracle)
    assert (fab_norm < 0.5 * per_case_norm(pgd.delta.double(), "linf")).all()


def test_fab_returns_the_clean_input_when_the_budget_is_too_small():
    a = 0.2
    net, x, target, _ = _linear_problem(torch.tensor(a))
    out = run_attack(net, x, target, AttackConfig("fab", eps=0.5 * a, steps=8))
    assert torch.equal(out.delta, torch.zeros_like(x))
    assert out.dice.tolist() == [1.0, 1.0]
    assert out.info["success_within_eps"] == [False, False]
    assert all(a <= n <= 1.02 * a for n in out.info["min_norm"])  # found, but above eps


def test_fab_respects_the_valid_input_box():
    net, x, target, _ = _linear_problem(torch.tensor(0.2))
    lo, hi = -0.25, 0.25
    out = run_attack(net, x, target, AttackConfig("fab", eps=1.0, steps=10, clamp=(lo, hi)))
    adv = x + out.delta
    assert adv.min() >= lo - 1e-6 and adv.max() <= hi + 1e-6
    assert (out.dice <= 0.5).all()


def test_target_ranks_and_their_validation(toy):
    net, x, target = toy  # 3 classes: ranks 2 and 3
    out = run_attack(net, x, target, AttackConfig("fab", eps=0.3, steps=2))
    assert {h.get("target_rank") for h in out.history} - {None} == {2, 3}
    one = run_attack(net, x, target, AttackConfig("fab", eps=0.3, steps=2, target_ranks=1))
    assert {h.get("target_rank") for h in one.history} - {None} == {2}
    assert one.n_forward == 2 + 2 * 2 and one.n_backward == 2
    with pytest.raises(ValueError, match="target_ranks=3"):
        run_attack(net, x, target, AttackConfig("fab", eps=0.3, steps=2, target_ranks=3))


def test_robust_threshold_stops_fab_at_the_first_success_within_eps():
    net, x, target, _ = _linear_problem(torch.tensor(0.2))
    gated = run_attack(
        net, x, target, AttackConfig("fab", eps=1.0, steps=10, restarts=4, robust_threshold=0.5)
    )
    assert gated.info["runs"] == 1 and gated.info["success_threshold"] == [0.5, 0.5]
    free = run_attack(net, x, target, AttackConfig("fab", eps=1.0, steps=10, restarts=4))
    assert free.info["runs"] == 4
    # a case whose clean Dice is already at the threshold is not attacked
    skip = run_attack(net, x, target, AttackConfig("fab", eps=1.0, steps=3, robust_threshold=1.0))
    assert skip.info["runs"] == 0 and skip.info["min_norm"] == [0.0, 0.0]
    assert torch.equal(skip.delta, torch.zeros_like(x))


def test_fab_is_l_inf_only():
    with pytest.raises(ValueError, match="L-inf"):
        AttackConfig("fab", eps=0.1, norm="l2")
