"""How much one correction click fixes, and how far the best possible click would go.

Measures the built-in model's click response behind ``bench_builtin_prompt.py``'s
correction rounds, on held-out volumes (shapes and appearances training never drew,
seeds >= 2000) and on tuning volumes of the *training* families (seeds 500-999), so
that an appearance gap and a limit of the correction mechanism can be told apart.
For every structure (box on its middle slice, tight or ``--loose`` px larger per side)
it runs ``--rounds`` correction rounds of the product (the slice with the most wrong
voxels, the larger error region, a click at its most interior pixel, then
:func:`napari_segeval.propagation.propagate_case` with the prompt set: local
corrections) and prints:

* **clicked slice**: the share of the clicked slice's wrong pixels that the model's
  click pass fixes (median, per positive and negative click) and how often the slice
  gets worse, as the product's correction computes it (a slice the result missed is
  first reached by :func:`~napari_segeval.models._prompt_corrections.bridge`, then
  :func:`~napari_segeval.models._prompt_corrections.clicked_slice`);
* **neighbours**: the same click's pass on slices 1..4 away (each on its own previous
  mask, the product's spread pass, before its acceptance test): the share of passes
  that reduce the slice's error and the net change of error they make together;
* **rounds**: median Dice after rounds 0..K and the share of round 0's gap to 1.0
  closed by round 3 - for the product, and for two oracles that replace the click's
  effect by the reference: the clicked slice made exactly right, and that slice with
  one neighbour each way. The oracles bound what any click response on one slice (and
  its neighbours) can reach with this rule.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_click_response.py --volumes 24 --threads 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _load_bench():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_builtin_prompt as bench

    return bench


def click_effects(model, x, pred: np.ndarray, ref: np.ndarray, prompts, reach: int) -> dict:
    """Errors before/after the click pass on the clicked slice and on each neighbour."""
    import torch

    from napari_segeval.models import _prompt_corrections as pc

    point = prompts.prompts[-1]
    f = int(point.index)
    prev = torch.from_numpy(pred)
    made = pc.bridge(model.net, model.size, x, prompts, prev)  # a missed slice: reached first
    new = pc.clicked_slice(
        model.net, model.size, x, prompts, prev[f].float() if made is None else made[1]
    )
    after = np.zeros_like(pred[f]) if new is None else (new > 0.5).numpy()
    out = {
        "positive": bool(point.positive),
        "slice": (int((pred[f] ^ ref[f]).sum()), int((after ^ ref[f]).sum())),
        "neighbours": [],
    }
    for g in range(max(0, f - reach), min(len(pred), f + reach + 1)):
        if g == f or not pred[g].any():
            continue
        ng = pc._click_pass(model.net, model.size, x, g, prev[g].float(), None, None, (point,))
        if ng is not None:
            m = (ng > 0.5).numpy()
            out["neighbours"].append(
                (abs(g - f), int((pred[g] ^ ref[g]).sum()), int((m ^ ref[g]).sum()))
            )
    return out


def rounds_of(model, x, labels: np.ndarray, args, bench) -> tuple[dict, list]:
    """Dice per round (product and oracles) and click effects of every structure."""
    from napari_segeval.prompts.box import Box
    from napari_segeval.prompts.prompt_set import Point, PromptSet
    from napari_segeval.propagation import propagate_case

    rows = {"product": [], "oracle slice": [], "oracle slice+-1": []}
    effects = []
    xs = model._frames(x)
    h, w = labels.shape[1:]
    for lab, z, (y0, x0, y1, x1) in bench.structures(labels, args.min_area):
        ref = labels == lab
        for m in (0, args.loose):
            box = (max(0, y0 - m), max(0, x0 - m), min(h, y1 + m), min(w, x1 + m))
            start = propagate_case(model, x, [Box(*box, index=z, label=lab)]).labels == lab
            for kind in rows:
                pred, row, clicks = start, [bench.dice(start, ref)], []
                ps = PromptSet.from_box(Box(*box, index=z, label=lab))
                for _ in range(args.rounds):
                    nxt = bench.correction_click(ref, pred)
                    if nxt is None:
                        row.append(row[-1])
                        continue
                    zc, (cy, cx, positive) = nxt
                    if kind == "product":
                        ps = ps.add(Point(cy, cx, index=zc, label=lab, positive=positive))
                        effects.append(click_effects(model, xs, pred, ref, ps, args.reach))
                        clicks.append(nxt)
                        pred = bench.product_propagate(model, x, lab, box, z, clicks)
                    else:
                        pred = pred.copy()
                        near = 0 if kind == "oracle slice" else 1
                        for g in range(max(0, zc - near), min(len(pred), zc + near + 1)):
                            pred[g] = ref[g]
                    row.append(bench.dice(pred, ref))
                rows[kind].append(row)
    return rows, effects


def report(name: str, rows: dict, effects: list, reach: int) -> None:
    print(f"\n{name}")
    for positive, word in ((True, "positive"), (False, "negative")):
        fixed = [
            1 - a / b
            for p, (b, a), _ in ((e["positive"], e["slice"], 0) for e in effects)
            if p == positive and b
        ]
        if fixed:
            print(
                f"  clicked slice, {word} clicks (n={len(fixed)}): median share of the "
                f"slice's error fixed {np.median(fixed):.0%}; the slice gets worse on "
                f"{np.mean(np.array(fixed) < 0):.0%}"
            )
    for d in range(1, reach + 1):
        nb = [(b, a) for e in effects for dd, b, a in e["neighbours"] if dd == d]
        if nb:
            b, a = np.array(nb).T
            print(
                f"  neighbour pass {d} slice(s) away (n={len(nb)}): error lower on "
                f"{np.mean(a < b):.0%}, net change {(a.sum() - b.sum()) / max(1, b.sum()):+.0%} "
                "of their error"
            )
    for kind, r in rows.items():
        arr = np.array(r)
        med = np.median(arr, axis=0)
        k = min(3, arr.shape[1] - 1)
        gap = (med[k] - med[0]) / max(1e-9, 1 - med[0])
        falls = [(arr[:, i + 1] < arr[:, i] - 1e-3).mean() for i in range(arr.shape[1] - 1)]
        print(
            f"  {kind:16s} n={arr.shape[0]:3d} median Dice "
            + " ".join(f"{v:.3f}" for v in med)
            + f"  gap closed by r{k} {gap:.0%}  falls per round "
            + "/".join(f"{f:.0%}" for f in falls)
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--volumes", type=int, default=12, help="volumes per data set")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--loose", type=int, default=5, help="loose box: pixels added per side")
    p.add_argument("--min-area", type=int, default=25)
    p.add_argument("--reach", type=int, default=4, help="neighbour passes up to this far")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--data", nargs="+", default=["held-out", "tuning"], choices=("held-out", "tuning")
    )
    args = p.parse_args(argv)
    import torch

    from napari_segeval.models.builtin_prompt import BuiltinPromptModel
    from napari_segeval.training.heldout import make_heldout_volume, make_tuning_volume

    torch.set_num_threads(args.threads)
    bench = _load_bench()
    model = BuiltinPromptModel()
    make = {
        "held-out": lambda i: make_heldout_volume(2000 + i),
        "tuning": lambda i: make_tuning_volume(500 + i),
    }
    for data in args.data:
        t0 = time.time()
        rows, effects = {}, []
        for i in range(args.volumes):
            image, labels = make[data](i)
            r, e = rounds_of(model, torch.from_numpy(image), labels, args, bench)
            for k, v in r.items():
                rows.setdefault(k, []).extend(v)
            effects += e
        report(
            f"{data} volumes ({args.volumes}, tight and +{args.loose} px boxes, "
            f"{args.rounds} rounds; {time.time() - t0:.0f} s)",
            rows,
            effects,
            args.reach,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
