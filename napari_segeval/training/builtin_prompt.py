"""Train the built-in promptable model: a class-agnostic box-and-click segmenter.

Recipe and shipped command: docs/model_cards.md. Runs to ``--iterations`` or ``--minutes``,
whichever ends first, on a cosine schedule fitted to it; stacks: :mod:`.prompt_sources`,
episodes: :mod:`.prompt_examples`; output: :func:`~napari_segeval.models.builtin_prompt.save_weights`.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from napari_segeval.models._prompt_net import POINT_CHANNELS, PromptUNet, paste
from napari_segeval.models.builtin_prompt import DEFAULT_WEIGHTS, load_network, save_weights
from napari_segeval.training.builtin_ct import optimizer_step
from napari_segeval.training.prompt_examples import Episode, episode
from napari_segeval.training.prompt_sources import Stack, phantom_stacks, scene_stack

#: Share of episodes drawn from generated scenes, phantoms, and scene objects pasted on phantoms.
SOURCES = {"scene": 0.30, "phantom": 0.55, "paste": 0.15}
#: Share of each kind of phantom among the phantom episodes.
PHANTOM_KINDS = {"ct": 0.6, "us": 0.25, "rgb": 0.15}


class Pool:
    """Training stacks: generated scenes (replaced as training goes) and phantoms."""

    def __init__(
        self, scenes: list[Stack], phantoms: list[Stack], sources: dict | None = None
    ) -> None:
        self.scenes = scenes
        self.phantoms = {k: [s for s in phantoms if s.kind == k] for k in PHANTOM_KINDS}
        self.backgrounds = [s for s in phantoms if s.kind in ("ct", "us")]
        self.sources = dict(sources or SOURCES)

    def _phantom(self, rng: np.random.Generator) -> Stack | None:
        kinds = [k for k in PHANTOM_KINDS if self.phantoms[k]]
        if not kinds:
            return None
        p = np.array([PHANTOM_KINDS[k] for k in kinds])
        stacks = self.phantoms[str(rng.choice(kinds, p=p / p.sum()))]
        return stacks[int(rng.integers(len(stacks)))]

    def refresh(self, rng: np.random.Generator) -> None:
        """Replace one random scene by a new one."""
        self.scenes[int(rng.integers(len(self.scenes)))] = scene_stack(rng)

    def draw(self, rng: np.random.Generator) -> Episode:
        """One episode from a random source (:data:`SOURCES`, :data:`PHANTOM_KINDS`)."""
        kinds = list(self.sources)
        p = np.array([self.sources[k] for k in kinds])
        while True:
            kind = str(rng.choice(kinds, p=p / p.sum()))
            stack = self._phantom(rng) if kind == "phantom" else None
            bg = None
            if stack is None:
                stack = self.scenes[int(rng.integers(len(self.scenes)))]
                if kind == "paste" and self.backgrounds:
                    bg = self.backgrounds[int(rng.integers(len(self.backgrounds)))]
            if stack.present and (ep := episode(stack, rng, bg)) is not None:
                return ep


def make_pool(args: argparse.Namespace, rng: np.random.Generator, log=print) -> Pool:
    """The scenes and phantoms of the command's options."""
    t0 = time.time()
    scenes = [scene_stack(rng) for _ in range(args.scenes)]
    log(f"{len(scenes)} generated scenes in {time.time() - t0:.0f} s")
    sources = {
        "scene": 1.0 - args.phantom_share - args.paste_share,
        "phantom": args.phantom_share,
        "paste": args.paste_share,
    }
    return Pool(
        scenes, phantom_stacks(args.ct_cases, args.echo_clips, args.rgb_images, log), sources
    )


def simulate(net: torch.nn.Module, eps: list[Episode], size: int, rng: np.random.Generator) -> None:
    """Run every episode's passes but the last (no gradients, inference mode), each output
    pasted back to its frame for the next click."""
    was_training = net.training
    net.eval()
    with torch.no_grad():
        while todo := [e for e in eps if e.passes > 1]:
            prob = torch.sigmoid(net(torch.stack([e.inputs(size) for e in todo])))
            for e, p in zip(todo, prob):
                win = torch.tensor([e.window], dtype=torch.float32)
                e.add_click(paste(p[None], win, *e.target.shape)[0, 0], rng)
                e.passes -= 1
    net.train(was_training)


def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """BCE plus soft Dice (per example, empty targets handled by the BCE)."""
    bce = F.binary_cross_entropy_with_logits(logits, target)
    p = torch.sigmoid(logits)
    inter = (p * target).sum((1, 2, 3))
    denom = p.sum((1, 2, 3)) + target.sum((1, 2, 3))
    dice = 1 - (2 * inter + 1) / (denom + 1)
    return bce + dice.mean()


def train_step(net, opt, pool: Pool, rng: np.random.Generator, size: int, batch: int) -> float:
    """One optimisation step on ``batch`` fresh episodes; returns the loss."""
    eps = [pool.draw(rng) for _ in range(batch)]
    simulate(net, eps, size, rng)
    x = torch.stack([e.inputs(size) for e in eps])
    y = torch.stack([e.target_crop(size) for e in eps])
    return optimizer_step(opt, loss_fn(net(x), y))


def initial_network(args: argparse.Namespace) -> PromptUNet:
    """A fresh network, or one that starts from ``args.init``'s weights; a 4-channel file (format
    1, no clicks) fills the first convolution's first four input channels, the click channels
    start at zero (so the network starts out exactly as the file's)."""
    net = PromptUNet(width=args.width, depth=args.depth, in_channels=POINT_CHANNELS)
    if args.init is None:
        return net
    old, config = load_network(args.init)
    if (int(config["width"]), int(config["depth"])) != (args.width, args.depth):
        raise SystemExit(
            f"{args.init}: width/depth {config['width']}/{config['depth']} "
            f"differ from --width/--depth {args.width}/{args.depth}"
        )
    state = {k: v.clone() for k, v in old.state_dict().items()}
    first = "down.0.0.weight"
    if state[first].shape[1] < POINT_CHANNELS:
        w = torch.zeros(net.state_dict()[first].shape)
        w[:, : state[first].shape[1]] = state[first]
        state[first] = w
    net.load_state_dict(state)
    return net


def train(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    pool = make_pool(args, rng)
    net = initial_network(args)
    print(f"parameters: {sum(p.numel() for p in net.parameters())}", flush=True)
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=1e-4)
    running, it, budget = None, 0, args.minutes * 60.0
    t1 = time.time()
    while True:  # warm-up, then cosine over iterations or the time budget, whichever ends first
        done = max(it / args.iterations, (time.time() - t1) / budget)
        if done >= 1.0:
            break
        it += 1
        lr = args.lr * 0.5 * (1 + math.cos(math.pi * done)) * min(1.0, 0.1 + 30 * done)
        for group in opt.param_groups:
            group["lr"] = lr
        if args.refresh and it % args.refresh == 0:
            pool.refresh(rng)
        loss = train_step(net, opt, pool, rng, args.size, args.batch)
        running = loss if running is None else 0.98 * running + 0.02 * loss
        if it % 50 == 0:
            print(
                f"it {it:5d}  loss {running:.4f}  lr {lr:.2e}  {time.time() - t0:.0f} s", flush=True
            )
        if args.checkpoint_every and it % args.checkpoint_every == 0:
            _save(net, args, it)
    _save(net, args, it)
    print(f"wrote {args.output} after {time.time() - t0:.0f} s ({it} iterations)", flush=True)


def _save(net, args: argparse.Namespace, it: int) -> None:
    config = {k: getattr(args, k) for k in ("width", "depth", "size")}
    config.update(in_channels=POINT_CHANNELS, iterations=it)
    config.update({k: getattr(args, k) for k in ("scenes", "ct_cases", "echo_clips", "rgb_images")})
    config["init"] = None if args.init is None else Path(args.init).name
    was = net.training
    save_weights(net.eval(), args.output, config)
    net.train(was)


#: Help of the command's options that need one.
HELP = {
    "--scenes": "generated scenes kept at a time",
    "--refresh": "replace one scene every this many iterations (0: never)",
    "--phantom-share": "share of episodes on phantoms (the rest: scenes and pasted objects)",
    "--paste-share": "share of episodes with a scene object pasted on a phantom",
    "--minutes": "time budget for the optimisation loop (cosine schedule fits it)",
    "--checkpoint-every": "also write the output every this many iterations (0: only at the end)",
    "--init": "start from this weight file (4-channel files: click weights start at 0)",
}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, kind, default in (
        ("--scenes", int, 120),
        ("--refresh", int, 4),
        ("--ct-cases", int, 40),
        ("--echo-clips", int, 40),
        ("--rgb-images", int, 24),
        ("--phantom-share", float, SOURCES["phantom"]),
        ("--paste-share", float, SOURCES["paste"]),
        ("--iterations", int, 20000),
        ("--batch", int, 16),
        ("--size", int, 64),
        ("--width", int, 12),
        ("--depth", int, 3),
        ("--minutes", float, 75.0),
        ("--lr", float, 3e-3),
        ("--threads", int, 2),
        ("--seed", int, 0),
        ("--checkpoint-every", int, 500),
        ("--init", Path, None),
        ("--output", Path, DEFAULT_WEIGHTS),
    ):
        p.add_argument(flag, type=kind, default=default, help=HELP.get(flag))
    train(p.parse_args(argv))


if __name__ == "__main__":
    main()
