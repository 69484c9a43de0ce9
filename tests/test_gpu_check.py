"""``scripts/gpu-check.sh --device cpu --quick``: the GPU check's dry run on the CPU.

Every step runs on tiny inputs (the CUDA-marked tests skip without a GPU) and the
summary table lists each of them as done. A release check (``scripts/test.sh --release``):
minutes of benchmarks on a CPU.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.release
def test_gpu_check_dry_run_on_cpu():
    pytest.importorskip("sam2", reason="the MedSAM2 benchmarks need Meta's sam2 package")
    pytest.importorskip("hydra")
    if shutil.which("bash") is None or shutil.which("timeout") is None:
        pytest.skip("needs bash and coreutils' timeout")
    proc = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts" / "gpu-check.sh"),
            "--device",
            "cpu",
            "--quick",
            "--python",
            sys.executable,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    table = out[out.index("gpu-check summary") :].splitlines()
    rows = {line.split()[0]: line.split()[1] for line in table[2:] if line.strip()}
    assert rows == {
        "cuda-tests": "ok",
        "medsam2-speed": "ran",
        "attacks": "ran",
        "multi-structure": "ran",
        "litemedsam": "ran",
        "litemedsam-encoder": "ran",
    }, out[-4000:]
    assert "skipped" in out  # the CUDA tests skip cleanly on a CPU-only machine
    assert "backend=medsam2" in out and "backend=builtin" in out
