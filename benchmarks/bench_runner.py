"""Runner throughput: cases per minute on the bundled MSD sample task with 1 vs 2 workers.

    python benchmarks/bench_runner.py                       # medsam2-3d, built-in model
    python benchmarks/bench_runner.py --model threshold     # weight-free baseline
    python benchmarks/bench_runner.py --protocol msd-robust --model builtin-ct

One worker runs the cases in this process; N > 1 uses a spawned process pool
(its start-up, including importing torch in each worker, is part of the time,
as it is for a user). Every run starts from an empty results folder. Prints
one JSON line per setting.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"


def bench(protocol: str, model: str, workers: int, repeat: int, data: Path) -> dict:
    from napari_segeval.evaluation import run_evaluation

    times, n = [], 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            r = run_evaluation(
                data, protocol, out, params={"model": model}, workers=workers, report=False
            )
            times.append(time.perf_counter() - t0)
            n = r.n_ok
            if r.n_failed:
                raise SystemExit(f"{r.n_failed} cases failed: {r.summary['failed'][:2]}")
    best = min(times)
    return {
        "protocol": protocol,
        "model": model,
        "workers": workers,
        "cases": n,
        "seconds": round(best, 2),
        "cases_per_minute": round(60.0 * n / best, 1),
        "cpus": os.cpu_count(),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--protocol", default="medsam2-3d")
    p.add_argument("--model", default="builtin")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeat", type=int, default=2, help="best of N runs")
    p.add_argument("--data", type=Path, default=TASK)
    args = p.parse_args(argv)
    for w in args.workers:
        print(json.dumps(bench(args.protocol, args.model, w, args.repeat, args.data)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
