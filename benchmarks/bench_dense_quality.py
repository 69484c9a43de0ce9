"""Quality of the built-in dense CT model on held-out generated phantoms.

Segments phantoms with seeds ``--first .. --first + --cases - 1`` (training used seeds
< 1000) at the default phantom geometry and prints per-structure Dice: median and
IQR over cases where the structure is present in the reference. Target: median
Dice >= 0.85 for every organ (liver, spleen, kidneys); the liver tumour is reported
without a target.

Run: ``.venv/bin/python benchmarks/bench_dense_quality.py [--cases 10] [--first 3000]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

TARGET = 0.85


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--first", type=int, default=3000)
    ap.add_argument("--model", default="builtin-ct")
    ap.add_argument("--overlap", type=float, default=0.5)
    ap.add_argument("--no-postprocess", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)

    import torch

    from napari_segeval.metrics.overlap import overlap_metrics
    from napari_segeval.models.dense import segment_case
    from napari_segeval.models.registry import load_dense
    from napari_segeval.phantoms.ct import make_ct_case

    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_dense(args.model, device="cpu")
    organs = set(model.postprocessing.organs)
    dice: dict[int, list[float]] = {k: [] for k in model.structures}
    seconds = []
    for seed in range(args.first, args.first + args.cases):
        case = make_ct_case(seed)
        t0 = time.perf_counter()
        res = segment_case(model, case, overlap=args.overlap, postprocess=not args.no_postprocess)
        seconds.append(time.perf_counter() - t0)
        table = overlap_metrics(case.labels, res.labels, labels=list(model.structures), empty="nan")
        for k, row in table.items():
            if (case.labels == k).any():
                dice[k].append(row["dice"])
    print(
        f"model {model.name}: {args.cases} held-out phantoms (seeds {args.first}-"
        f"{args.first + args.cases - 1}), overlap {args.overlap}, post-processing "
        f"{'off' if args.no_postprocess else 'on'}; {np.median(seconds):.2f} s/case median"
    )
    head = ("structure", "n", "median Dice", "IQR", "min", "target", "result")
    rows_out, ok = [], True
    for k, name in sorted(model.structures.items()):
        d = np.asarray(dice[k], float)
        if d.size == 0:
            rows_out.append((name, "0", "-", "-", "-", "", ""))
            continue
        q1, med, q3 = np.percentile(d, [25, 50, 75])
        target = f">= {TARGET}" if k in organs else "-"
        passed = med >= TARGET if k in organs else None
        ok &= passed is not False
        rows_out.append(
            (
                name,
                str(d.size),
                f"{med:.4f}",
                f"{q1:.4f}-{q3:.4f}",
                f"{d.min():.4f}",
                target,
                "" if passed is None else ("PASS" if passed else "FAIL"),
            )
        )
    widths = [max(len(r[i]) for r in (head, *rows_out)) for i in range(len(head))]
    for r in (head, tuple("-" * w for w in widths), *rows_out):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
