"""The built-in promptable model on held-out generated volumes: a box, then correction clicks.

The volumes (:mod:`napari_segeval.training.heldout`, seeds >= 2000) hold objects of
shape families and appearances that training never draws (stars and rounded
rectangles; striped textures, posterised intensities, Poisson or impulse noise).
Every object whose middle slice has at least ``--min-area`` pixels is one structure:

* round 0: a box on the middle slice of the object's extent, *tight* (the
  reference's bounding box) or *loose* (``--loose`` pixels more on every side),
  propagated both ways by :func:`napari_segeval.propagation.propagate_case` (the
  product's path: the model's confidence stop, largest component);
* rounds 1..K (models with click channels): the slice with the most wrong voxels
  (:func:`napari_segeval.prompts.correction.most_wrong_slice`), the larger of its
  false-negative and false-positive regions, a click at its most interior pixel
  (:func:`napari_segeval.training.clicks.corrective_click`), then
  ``--engine product`` (default when available): :func:`propagate_case` with the
  structure's prompt set, where every click after the box is a local correction of the
  result before it (:mod:`napari_segeval.propagation.corrections`); ``--engine
  harness``: the rule before those corrections, a re-propagation with every prompt so
  far (:func:`propagate_prompts` below: a forward walk from the first prompted slice
  and a backward walk from the last, each applying the prompts of every slice it
  reaches - box pass (a fresh start, as on the walk's first slice), then one pass per
  click - the two walks combined by their maximum, no stop before the last prompted
  slice of a walk, then the confidence stop and the largest component).

Printed per weight file and box: Dice (median [IQR]) after each round, the share of
round 0's gap to 1.0 closed after round 3 and after round K, and the share of structures whose Dice
fell from one round to the next.

Usage::

    git show 4879fda:napari_segeval/models/weights/builtin-prompt.pt > /tmp/before.pt
    python benchmarks/bench_builtin_prompt.py --weights /tmp/before.pt \\
        napari_segeval/models/weights/builtin-prompt.pt --volumes 24 --rounds 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _pass(model, x, f: int, prev: int, prior, boxmask, points, win):
    """One network pass on frame ``f``: probabilities ``(H, W)`` pasted back."""
    import torch

    from napari_segeval.models._prompt_net import click_maps, crop, paste

    h, w = x.shape[1:]
    wt = torch.tensor([win], dtype=torch.float32)
    planes = torch.stack([x[f], x[prev], prior, boxmask])[None]
    inp = crop(planes, wt, model.size)
    if model.net.in_channels > 4:
        inp = torch.cat([inp, click_maps([points], wt, model.size)], 1)
    return paste(torch.sigmoid(model.net(inp)), wt, h, w)[0, 0]


def run_walk(
    model,
    x,
    prompts: dict,
    start: int,
    order: str,
    min_conf: float | None,
    previous=None,
    restart: str = "always",
):
    """Frames one walk visits (visit order), their probabilities, and how far each is
    from the walk's latest prompted frame (module doc). ``previous`` (optional ``(n, H,
    W)``): the previous round's masks, the output a click-only start frame refines.
    ``restart``: a box frame reached mid-walk acts as a walk's start frame (prior = the
    box mask, previous frame = the frame) when the incoming prior is empty
    (``"empty"``) or always (``"always"``: the product's rule); ``"none"``: the
    incoming prior (the product's rule before issue 23)."""
    import torch

    from napari_segeval.models._prompt_net import refine_window, window_from_bbox, window_from_mask
    from napari_segeval.propagation.walks import confidence_stop

    n, h, w = x.shape
    frames = list(range(start, n)) if order == "forward" else list(range(start, -1, -1))
    last = max(j for j, f in enumerate(frames) if f in prompts)
    zeros = torch.zeros((h, w))
    out, cur, win, stopped, since, dist = [], zeros, None, False, 0, []
    for j, f in enumerate(frames):
        box, points = prompts.get(f, (None, []))
        since = 0 if f in prompts else since + 1
        dist.append(since)
        if stopped:
            out.append(zeros)
            continue
        boxmask = zeros.clone()
        if box is not None:
            boxmask[box[0] : box[2], box[1] : box[3]] = 1
            win = window_from_bbox(*box)
            fresh = (
                j == 0
                or restart == "always"
                or (restart == "empty" and not bool((cur > 0.5).any()))
            )
            prior = boxmask if fresh else cur
            cur = _pass(model, x, f, f if fresh else frames[j - 1], prior, boxmask, [], win)
        elif j == 0 and previous is not None:
            cur = torch.as_tensor(previous[f], dtype=torch.float32)
        elif j > 0:
            win = window_from_mask(cur) or win
            cur = zeros if win is None else _pass(model, x, f, frames[j - 1], cur, zeros, [], win)
        for i in range(len(points)):
            pwin = refine_window(cur, points[: i + 1], box)
            if pwin is not None:
                cur = _pass(model, x, f, f, cur, boxmask, points[: i + 1], pwin)
        out.append(cur)
        if j >= last and j > 0 and not bool((cur > 0.5).any()):
            stopped = True
    probs = torch.stack(out)
    # the confidence stop, never at or before the walk's last prompted frame
    probs[last + confidence_stop(probs[last:], min_conf) :] = 0
    return frames, probs, dist


def propagate_prompts(
    model,
    x,
    prompts: dict,
    min_conf: float | None,
    previous=None,
    combine: str = "max",
    restart: str = "always",
) -> np.ndarray:
    """Boolean mask ``(n, H, W)`` of one structure from its prompts ``{slice: (box, points)}``.

    A forward walk from the first prompted slice and a backward walk from the last;
    a slice both reach takes their maximum (``combine="max"``) or the walk whose
    latest prompted slice is nearer (``"nearest"``, the maximum on a tie).
    """
    import torch

    from napari_segeval.propagation.masks import largest_component

    first, last = min(prompts), max(prompts)
    n = x.shape[0]
    prob = torch.zeros(x.shape)
    near = torch.full((n,), n + 1)
    with torch.no_grad():
        for start, order in ((first, "forward"), (last, "backward")):
            frames, p, dist = run_walk(model, x, prompts, start, order, min_conf, previous, restart)
            for f, pf, d in zip(frames, p, dist):
                if combine == "max" or d == near[f]:
                    prob[f] = torch.maximum(prob[f], pf)
                elif d < near[f]:
                    prob[f] = pf
                near[f] = min(int(near[f]), d)
    return largest_component(prob.numpy() > 0.5)


def product_takes_prompt_sets() -> bool:
    """Whether :func:`propagate_case` takes prompt sets (the product's correction path)."""
    try:
        import napari_segeval.propagation.options  # noqa: F401
    except ImportError:
        return False
    return True


def product_propagate(model, x, lab: int, box, z: int, clicks: list) -> np.ndarray:
    """The product's re-propagation: :func:`propagate_case` with the structure's prompt set."""
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.prompt_set import Point, PromptSet
    from napari_segeval.propagation import propagate_case

    ps = PromptSet.from_box(Box(*box, index=z, label=lab))
    for zc, (y, xx, positive) in clicks:
        ps = ps.add(Point(y, xx, index=zc, label=lab, positive=positive))
    return propagate_case(model, x, {lab: ps}).labels == lab


def dice(a: np.ndarray, b: np.ndarray) -> float:
    denom = int(a.sum()) + int(b.sum())
    return 1.0 if denom == 0 else 2.0 * float((a & b).sum()) / denom


def correction_click(ref: np.ndarray, pred: np.ndarray):
    """``(z, (y, x, positive))`` of the next correction (module doc), or ``None``."""
    from napari_segeval.prompts.correction import most_wrong_slice
    from napari_segeval.training.clicks import corrective_click

    z = most_wrong_slice(ref, pred)
    if z is None:
        return None
    return z, corrective_click(ref[z], pred[z])


def structures(labels: np.ndarray, min_area: int):
    """``(label, middle slice, bbox)`` of each object whose middle slice is large enough."""
    out = []
    for lab in range(1, int(labels.max()) + 1):
        zs = np.nonzero((labels == lab).any(axis=(1, 2)))[0]
        if zs.size == 0:
            continue
        z = int(zs[len(zs) // 2])
        ys, xs = np.nonzero(labels[z] == lab)
        if ys.size >= min_area:
            out.append(
                (lab, z, (int(ys.min()), int(xs.min()), int(ys.max()) + 1, int(xs.max()) + 1))
            )
    return out


def evaluate(model, volumes, args) -> dict:
    """Dice per round for tight and loose boxes: ``{box kind: (n_structures, rounds+1) array}``."""
    import torch

    from napari_segeval.prompts.box import Box
    from napari_segeval.propagation import propagate_case

    rounds = args.rounds if model.net.in_channels > 4 else 0
    product = args.engine == "product" or (args.engine == "auto" and product_takes_prompt_sets())
    scores = {"tight": [], "loose": []}
    for image, labels in volumes:
        x = torch.from_numpy(image)
        h, w = labels.shape[1:]
        for lab, z, (y0, x0, y1, x1) in structures(labels, args.min_area):
            ref = labels == lab
            for kind, m in (("tight", 0), ("loose", args.loose)):
                box = (max(0, y0 - m), max(0, x0 - m), min(h, y1 + m), min(w, x1 + m))
                res = propagate_case(model, x, [Box(*box, index=z, label=lab)])
                pred = res.labels == lab
                row = [dice(pred, ref)]
                prompts, clicks = {z: (box, [])}, []
                if args.check:
                    mine = propagate_prompts(model, x, prompts, args.stop)
                    assert np.array_equal(mine, pred), "harness round 0 differs from propagate_case"
                for _ in range(rounds):
                    nxt = correction_click(ref, pred)
                    if nxt is None:
                        row.append(row[-1])
                        continue
                    zc, click = nxt
                    b, pts = prompts.get(zc, (None, []))
                    prompts[zc] = (b, pts + [click])
                    clicks.append((zc, click))
                    previous = pred.astype(np.float32) if args.previous else None
                    if product:
                        pred = product_propagate(model, x, lab, box, z, clicks)
                    else:  # the rule before local corrections (module doc)
                        pred = propagate_prompts(
                            model, x, prompts, args.stop, previous, args.combine, args.restart
                        )
                    row.append(dice(pred, ref))
                scores[kind].append(row)
    return {k: np.array(v) for k, v in scores.items()}


def report(name: str, scores: dict) -> None:
    for kind, arr in scores.items():
        n, r = arr.shape
        cells = []
        for k in range(r):
            q1, med, q3 = np.percentile(arr[:, k], [25, 50, 75])
            cells.append(f"r{k} {med:.3f} [{q1:.3f}, {q3:.3f}]")
        line = f"{name:28s} {kind:5s} n={n:3d}  " + "  ".join(cells)
        if r > 1:
            m0 = np.median(arr[:, 0])
            closed = [
                (np.median(arr[:, k]) - m0) / max(1e-9, 1 - m0)
                for k in sorted({min(3, r - 1), r - 1})
            ]
            falls = [(arr[:, k + 1] < arr[:, k] - 1e-3).mean() for k in range(r - 1)]
            anyfall = (np.diff(arr, axis=1) < -1e-3).any(axis=1).mean()
            line += (
                "  gap closed "
                + "/".join(f"{c:.0%}" for c in closed)
                + f" (after r{min(3, r - 1)}/r{r - 1})  falls per round "
                + "/".join(f"{f:.0%}" for f in falls)
                + f" (any {anyfall:.0%})"
            )
        print(line, flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--weights",
        nargs="+",
        default=[None],
        help="built-in weight files to compare (default: the shipped one)",
    )
    p.add_argument("--volumes", type=int, default=24)
    p.add_argument("--seed", type=int, default=2000, help="first held-out seed (>= 2000)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--loose", type=int, default=5, help="loose box: pixels added per side")
    p.add_argument(
        "--min-area",
        type=int,
        default=25,
        help="smallest middle-slice area (pixels) of a scored object",
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--min-confidence",
        default="model",
        help="confidence stop: 'model' (the model's own), 'none' or a number",
    )
    p.add_argument(
        "--tuning",
        action="store_true",
        help="tuning volumes of the training families (seeds from --seed, 500-999) "
        "instead of held-out ones",
    )
    p.add_argument(
        "--engine",
        choices=("auto", "product", "harness"),
        default="auto",
        help="correction rounds through propagate_case with prompt sets (product; "
        "auto: when it takes them) or this script's harness",
    )
    p.add_argument(
        "--combine",
        choices=("max", "nearest"),
        default="max",
        help="slices both walks reach: their maximum, or the walk whose latest "
        "prompted slice is nearer",
    )
    p.add_argument(
        "--previous",
        action="store_true",
        help="a walk that starts on a clicked slice refines the previous round's "
        "mask there (SAM2's rule for a tracked frame), not an empty one",
    )
    p.add_argument(
        "--restart",
        choices=("none", "empty", "always"),
        default="always",
        help="harness: a box frame reached mid-walk acts as a walk's start (prior = "
        "the box mask, previous frame = the frame) when the incoming prior is "
        "empty, or always (the product's rule); none: the incoming prior (the "
        "product's rule before issue 23)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="assert the harness's round 0 equals propagate_case's (the rounds "
        "differ: the product corrects locally)",
    )
    args = p.parse_args(argv)
    import torch

    from napari_segeval.models.builtin_prompt import BuiltinPromptModel
    from napari_segeval.training.heldout import make_heldout_volume, make_tuning_volume

    torch.set_num_threads(args.threads)
    t0 = time.time()
    make = make_tuning_volume if args.tuning else make_heldout_volume
    volumes = [make(args.seed + i) for i in range(args.volumes)]
    print(
        f"{args.volumes} {'tuning' if args.tuning else 'held-out'} volumes "
        f"(seeds {args.seed}..) in {time.time() - t0:.0f} s; "
        f"loose = +{args.loose} px per side; rounds: worst slice, larger error region, "
        f"most interior pixel",
        flush=True,
    )
    for weights in args.weights:
        model = BuiltinPromptModel(weights, device="cpu")
        args.stop = (
            model.capabilities.stop_confidence
            if args.min_confidence == "model"
            else None
            if args.min_confidence == "none"
            else float(args.min_confidence)
        )
        t0 = time.time()
        scores = evaluate(model, volumes, args)
        engine = (
            "product"
            if args.engine == "product" or (args.engine == "auto" and product_takes_prompt_sets())
            else "harness"
        )
        report(
            f"{str(weights or 'shipped')[-20:]} stop={args.stop} {engine} "
            f"{args.combine}{' prev' if args.previous else ''}"
            f"{'' if args.restart == 'always' else ' restart-' + args.restart}",
            scores,
        )
        print(f"  ({time.time() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
