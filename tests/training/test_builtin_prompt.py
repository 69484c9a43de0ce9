"""Training of the built-in promptable model: episodes follow the inference rules; one step runs."""

import argparse

import numpy as np
import pytest
import torch

from napari_segeval.models._prompt_net import PromptUNet, click_maps, crop
from napari_segeval.models.builtin_prompt import load_network, save_weights
from napari_segeval.training import builtin_prompt as bp
from napari_segeval.training import prompt_examples as pe
from napari_segeval.training.prompt_sources import Stack, frames, scene_stack


@pytest.fixture(scope="module")
def pool():
    rng = np.random.default_rng(0)
    scenes = [scene_stack(rng, depth=(8, 12)) for _ in range(3)]
    lab = np.zeros((1, 64, 64), np.uint8)
    lab[0, 20:40, 10:30] = 1
    img = torch.from_numpy(lab.astype(np.float32) * 0.5 + 0.2)
    flat = Stack("rgb", torch.from_numpy(lab), image=img)
    return bp.Pool(scenes, [flat])


def test_box_jitter_covers_tight_inside_and_loose():
    rng = np.random.default_rng(0)
    box = (20, 20, 40, 50)
    kinds = set()
    for _ in range(200):
        y0, x0, y1, x1 = pe.jitter_box(box, 100, 100, rng)
        assert 0 <= y0 < y1 <= 100 and 0 <= x0 < x1 <= 100
        grow = (20 - y0, 20 - x0, y1 - 40, x1 - 50)
        assert max(grow) <= 20 and min(grow) >= -3
        kinds.add(
            "tight"
            if grow == (0, 0, 0, 0)
            else "loose"
            if min(grow) >= 0 and max(grow) >= 5
            else "inside"
            if max(grow) <= 0
            else "mixed"
        )
    assert kinds == {"tight", "loose", "inside", "mixed"}


def test_episodes_of_every_start(pool):
    rng = np.random.default_rng(1)
    starts = {}
    for _ in range(200):  # the rarest start (propbox) first comes at draw 131
        ep = pool.draw(rng)
        starts.setdefault(ep.start, ep)
        x = ep.inputs(32)
        assert x.shape == (6, 32, 32) and torch.isfinite(x).all()
        assert ep.passes >= 1
    assert set(starts) == set(pe.STARTS)
    box = starts["box"]
    assert torch.equal(box.prior, box.box) and torch.equal(box.prev, box.cur)
    pts = starts["points"]
    assert not pts.base and pts.prior.sum() == 0 and pts.points[0][2] is True
    y, x, _ = pts.points[0]
    assert pts.target[y, x] == 1  # the first click is inside the object
    assert pts.box.sum() == 0


def test_click_pass_follows_the_inference_rule(pool):
    rng = np.random.default_rng(2)
    ep = next(
        e for e in iter(lambda: pool.draw(rng), None) if e.start == "prop" and e.target.sum() > 30
    )
    assert ep.base and not torch.equal(ep.prev, ep.cur)
    out = torch.zeros_like(ep.target)  # a prediction that missed everything
    ep.add_click(out, rng)
    assert not ep.base and torch.equal(ep.prior, out)
    y, x, positive = ep.points[-1]
    assert positive and ep.target[y, x] == 1
    inp = ep.inputs(32)
    win = torch.tensor([ep.window])
    planes = torch.stack([ep.cur, ep.cur, out, ep.box])[None]  # previous-frame channel = frame
    assert torch.allclose(inp[:4], crop(planes, win, 32)[0])
    assert torch.equal(inp[4:], click_maps([ep.points], win, 32)[0])
    assert inp[4].sum() > 0  # the click is inside the window


def test_simulate_leaves_one_pass_and_adds_clicks(pool):
    rng = np.random.default_rng(3)
    eps = [pool.draw(rng) for _ in range(12)]
    before = [(e.passes, len(e.points)) for e in eps]
    net = PromptUNet(width=4, depth=2, in_channels=6)
    bp.simulate(net, eps, 32, rng)
    assert net.training  # restored
    for e, (passes, clicks) in zip(eps, before):
        assert e.passes == 1
        assert len(e.points) <= clicks + passes - 1


def test_one_training_step_runs_and_learns_something(pool):
    torch.manual_seed(0)
    net = PromptUNet(width=4, depth=2, in_channels=6)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    w0 = net.head.weight.detach().clone()
    loss = bp.train_step(net, opt, pool, np.random.default_rng(4), 32, 4)
    assert np.isfinite(loss) and loss > 0
    assert not torch.equal(net.head.weight, w0)


def test_initial_network_from_four_channel_weights(tmp_path):
    torch.manual_seed(0)
    old = PromptUNet(width=4, depth=2).eval()
    path = tmp_path / "old.pt"
    save_weights(old, path, {"width": 4, "depth": 2, "size": 32})
    args = argparse.Namespace(width=4, depth=2, init=path)
    net = bp.initial_network(args).eval()
    x = torch.rand(2, 6, 32, 32)
    x[:, 4:] = 0
    assert torch.allclose(net(x), load_network(path)[0](x[:, :4]), atol=1e-6)
    with pytest.raises(SystemExit, match="differ from --width/--depth"):
        bp.initial_network(argparse.Namespace(width=8, depth=2, init=path))


def test_pasted_objects_and_phantom_frames_are_unit_range():
    rng = np.random.default_rng(5)
    scene = scene_stack(rng, depth=(6, 8))
    lab = next(iter(scene.present))
    z = int(scene.present[lab][0])
    bg = Stack("us", torch.zeros(4, 50, 60, dtype=torch.uint8), image=torch.rand(4, 50, 60))
    f = frames(rng, scene, [z, z], lab, background=bg)
    assert f.shape == (2,) + tuple(scene.labels.shape[1:])
    assert float(f.min()) >= 0 and float(f.max()) <= 1
