"""Square: forward passes only, every query inside the ball, its schedules and acceptance rule."""

import pytest
import torch

from napari_segeval.attacks import AttackConfig, run_attack
from napari_segeval.attacks._problem import Problem, per_case_norm
from napari_segeval.attacks.losses import case_dice
from napari_segeval.attacks.square import (
    _window_,
    p_selection,
    square_side,
    stripe_axis,
    stripes,
)


class NoBackward(torch.autograd.Function):
    """Identity whose backward pass fails the test: Square must never ask for a gradient."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise AssertionError("Square asked for a gradient")


def _gradient_free(net, seen):
    def forward(x):
        seen.append((x.requires_grad, torch.is_grad_enabled()))
        return net(NoBackward.apply(x))

    return forward


@pytest.mark.parametrize("loss", ["ce", "hard-dice"])
def test_square_lowers_dice_without_any_gradient(toy, loss):
    net, x, target = toy
    seen = []
    out = run_attack(
        _gradient_free(net, seen),
        x,
        target,
        AttackConfig("square", eps=0.3, steps=60, loss=loss, seed=1),
    )
    with torch.no_grad():
        clean = case_dice(net(x), target)
    assert out.n_backward == 0 and out.n_forward == 61 == len(seen)
    assert not any(req or grad for req, grad in seen)
    assert (out.dice <= clean).all() and out.dice.mean() < clean.mean() - 0.1


@pytest.mark.parametrize("eps", [0.07, 1 / 3, 8 / 255])
@pytest.mark.parametrize("clamp", [None, (-0.5, 0.8)])
def test_no_query_ever_leaves_the_ball(toy, eps, clamp, monkeypatch):
    net, x, target = toy
    deltas, inputs = [], []
    evaluate = Problem.evaluate

    def recording(self, delta, *args, **kwargs):
        deltas.append(delta.detach().clone())
        return evaluate(self, delta, *args, **kwargs)

    monkeypatch.setattr(Problem, "evaluate", recording)

    def forward(t):
        inputs.append(t.detach().clone())
        return net(t)

    out = run_attack(
        forward,
        x,
        target,
        AttackConfig("square", eps=eps, steps=25, restarts=2, clamp=clamp, seed=2),
    )
    assert len(deltas) == len(inputs) == 2 * 26
    ulp = torch.finfo(torch.float32).eps * x.abs().max().double()
    for d, seen in zip([*deltas, out.delta], [*inputs, x + out.delta]):
        assert (per_case_norm(d.double(), "linf") <= eps).all()  # exact, in float64
        # the float32 sum the model sees rounds by at most one ulp of x
        assert (per_case_norm(seen.double() - x.double(), "linf") <= eps + ulp).all()
        if clamp is not None:
            lo = torch.minimum(x, torch.tensor(clamp[0]))
            hi = torch.maximum(x, torch.tensor(clamp[1]))
            assert (seen >= lo).all() and (seen <= hi).all()


def test_p_schedule_follows_the_paper():
    # p halves after query 10, 50, 200, 500, 1000, 2000, 4000, 6000, 8000 (of 10,000)
    expected = {
        0: 0.8,
        10: 0.8,
        11: 0.4,
        50: 0.4,
        51: 0.2,
        201: 0.1,
        501: 0.05,
        1001: 0.025,
        2001: 0.0125,
        4001: 0.00625,
        6001: 0.003125,
        8001: 0.0015625,
        9999: 0.0015625,
    }
    for q, p in expected.items():
        assert p_selection(q, 10000, 0.8, "absolute") == pytest.approx(p)
        assert p_selection(q, 10000, 0.8, "rescaled") == pytest.approx(p)
    # rescaled to 5 queries (AutoAttack): queries 0..4 sit at 0, 2000, 4000, 6000, 8000
    assert [p_selection(q, 5, 0.8) for q in range(5)] == pytest.approx(
        [0.8, 0.025, 0.0125, 0.00625, 0.003125]
    )
    # absolute (ROG, 5 queries): p stays 0.8
    assert [p_selection(q, 5, 0.8, "absolute") for q in range(5)] == [0.8] * 5
    with pytest.raises(ValueError):
        p_selection(0, 5, 0.8, "paper")


def test_square_side_and_window_placement():
    assert square_side(0.8, [24, 48, 48]) == 35  # cube root of 0.8 x 24 x 48 x 48
    x = torch.zeros(1, 3, 10, 12, 4)  # channels at axis 1, (10, 12, 4) spatial
    cfg = AttackConfig("square", eps=0.5, steps=1, seed=0)
    problem = Problem(
        lambda t: t,
        x,
        torch.zeros(1, 10, 12, 4, dtype=torch.long),
        cfg,
        None,
        None,
        1,
        channel_axis=1,
    )
    delta = torch.zeros_like(x)
    _window_(delta, 0, problem, side=7)
    changed = delta[0, 0] != 0
    zs, ys, xs = (
        torch.nonzero(changed.any(dim=(1, 2))),
        torch.nonzero(changed.any(dim=(0, 2))),
        torch.nonzero(changed.any(dim=(0, 1))),
    )
    assert (len(zs), len(ys), len(xs)) == (7, 7, 4)  # clipped to the short axis
    for c in range(3):  # one sign per channel, the whole window
        vals = delta[0, c][changed]
        assert torch.all(vals == vals[0]) and float(vals[0].abs()) == 0.5


def test_stripes_of_a_volume_are_constant_along_x_the_nibabel_first_axis_as_rog():
    # ROG (rog/autoattack/square.py) draws random_choice([B, c, 1, h, w]) on nibabel arrays
    # (x, y, z): constant along x. Our arrays are (z, y, x): x is the last axis.
    x = torch.zeros(2, 1, 6, 5, 4)
    cfg = AttackConfig("square", eps=0.25, steps=1, seed=4)
    problem = Problem(lambda t: t, x, torch.zeros(2, 6, 5, 4, dtype=torch.long), cfg, None, None, 1)
    d = stripes(problem)
    assert torch.equal(d, d[..., :1].expand_as(d))
    assert not torch.equal(d, d[:, :, :1].expand_as(d))
    assert set(d.abs().unique().tolist()) == {0.25}
    assert len(d[0, 0, :, :, 0].unique()) == 2  # both signs occur


def test_stripes_of_an_image_are_constant_along_its_rows_as_the_paper():
    x = torch.zeros(1, 3, 8, 6)
    cfg = AttackConfig("square", eps=0.5, steps=1, seed=1)
    problem = Problem(lambda t: t, x, torch.zeros(1, 8, 6, dtype=torch.long), cfg, None, None, 1)
    d = stripes(problem)
    assert torch.equal(d, d[:, :, :1].expand_as(d))


def test_stripe_axis_rule():
    assert stripe_axis({2: 4, 3: 5, 4: 6}) == 4
    assert stripe_axis({2: 1, 3: 5, 4: 6}) == 3  # a one-slice volume is an image
    assert stripe_axis({2: 1, 3: 1}) is None


def test_accepted_iterates_never_lower_the_loss(toy):
    net, x, target = toy
    out = run_attack(
        net,
        x,
        target,
        AttackConfig("square", eps=0.2, steps=40, keep_best=False, schedule="absolute", seed=5),
    )
    running = torch.tensor(out.history[0]["loss"])
    for row in out.history[1:]:
        accepted = torch.tensor(row["accepted"])
        loss = torch.tensor(row["loss"])
        assert (loss[accepted] > running[accepted]).all()
        running = torch.where(accepted, loss, running)
    # keep_best=False returns the last accepted iterate: its loss is the running best
    assert torch.allclose(
        torch.nn.functional.cross_entropy(out.logits, target, reduction="none").mean(dim=(1, 2)),
        running,
        atol=1e-5,
    )


def test_robust_threshold_stops_querying_broken_cases(toy):
    net, x, target = toy
    out = run_attack(
        net, x, target, AttackConfig("square", eps=0.5, steps=200, robust_threshold=0.8, seed=0)
    )
    assert out.history[0]["restart"] == -1  # the clean input comes first
    assert (out.dice <= 0.8).all()
    assert all(q < 200 for q in out.info["queries"])
    assert out.n_forward == 2 + max(out.info["queries"])


def test_hard_dice_is_square_only_and_square_is_l_inf_only():
    with pytest.raises(ValueError, match="only square"):
        AttackConfig("pgd", eps=0.1, loss="hard-dice")
    with pytest.raises(ValueError, match="L-inf"):
        AttackConfig("square", eps=0.1, norm="l2")
    with pytest.raises(ValueError, match="does not apply"):
        AttackConfig("square", eps=0.1, schedule="rog")
    assert AttackConfig("square", eps=0.1).schedule == "rescaled"
