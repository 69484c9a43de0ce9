"""The runner's GPU parts: one worker per GPU, memory returned between cases.

The helpers are tested everywhere; the runs on a GPU carry the ``cuda`` marker
(skipped without one) and are run by ``scripts/gpu-check.sh``. Stated tolerance:
the built-in model runs under bf16 autocast on CUDA, so per-structure Dice on the
GPU is within 0.02 of the CPU run.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from napari_segeval.evaluation import run_evaluation
from napari_segeval.evaluation.runner import default_workers, gpu_for_worker, release_device_memory

MSD = Path(__file__).resolve().parents[2] / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def test_each_worker_gets_one_of_the_visible_gpus():
    assert [gpu_for_worker(i, 2) for i in range(4)] == ["0", "1", "0", "1"]
    assert [gpu_for_worker(i, 2, "3,5") for i in range(3)] == ["3", "5", "3"]
    assert gpu_for_worker(0, 0) == "0"


def test_memory_release_is_a_no_op_without_cuda(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert release_device_memory() is False  # torch not imported: nothing to do


def _dice(out: Path) -> dict:
    with open(out / "results.csv", newline="") as fh:
        return {
            (r["case"], r["structure"]): float(r["dice"])
            for r in csv.DictReader(fh)
            if r.get("dice") not in (None, "")
        }


def _run(tmp_path: Path, name: str, device: str, workers: int | None):
    return run_evaluation(
        MSD,
        "medsam2-3d",
        tmp_path / name,
        params={"model": "builtin", "device": device},
        workers=workers,
    )


@pytest.mark.cuda
@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")
def test_runner_with_one_gpu(tmp_path):
    import torch

    workers, gpus = default_workers(6)
    assert gpus == torch.cuda.device_count() and workers == min(6, gpus)
    gpu = _run(tmp_path, "gpu", "cuda", None)  # one GPU: cases run in this process
    assert (gpu.n_ok, gpu.n_failed) == (6, 0)
    assert torch.cuda.is_initialized() and release_device_memory()
    assert torch.cuda.memory_allocated() < 64 * 2**20  # no case left tensors behind
    _run(tmp_path, "cpu", "cpu", 1)
    a, b = _dice(tmp_path / "gpu"), _dice(tmp_path / "cpu")
    assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 0.02 for k in a)
    pool = _run(tmp_path, "pool", "cuda", 2)  # two worker processes sharing the GPU
    assert (pool.n_ok, pool.n_failed) == (6, 0)
    c = _dice(tmp_path / "pool")
    assert all(abs(a[k] - c[k]) <= 1e-6 for k in a)
