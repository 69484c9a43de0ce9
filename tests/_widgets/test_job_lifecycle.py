"""Closing napari, or deleting the layer a job reads, while each kind of panel job runs.

Each session runs in its own process (``_midjob.py``), so a crash (SIGABRT,
SIGSEGV: a worker calling back into a deleted Qt object) fails the test instead
of killing pytest. Mid-job is deterministic: the panel's job function waits at a
gate until the session has closed the window or deleted the layer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gui, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SESSION = Path(__file__).with_name("_midjob.py")
TASK = ROOT / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"
KINDS = ("propagate", "repropagate", "segment", "attack", "surface", "results", "uncertainty")
HANG_S = 900  # a hung session fails here instead of stalling the suite (not a speed limit)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """What a kind's session needs: ``{kind: path or None}``."""
    import torch

    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.models.dense import BUILTIN_PLANS
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    from ..conftest import TINY_INTENSITY

    tmp = tmp_path_factory.mktemp("midjob")
    # the tiny U-Net of tests/conftest.py with one patch covering the CT sample
    # (resampled to 40 x 56 x 56): the session segments it in a second or two
    torch.manual_seed(0)
    cfg = {"in_channels": 1, "num_classes": 6, "base_channels": 2, "levels": 2}
    weights = dict(BUILTIN_PLANS)
    weights.update(config=cfg, patch_size=[40, 56, 56], spacing=[2.5, 2.4, 2.4],
                   intensity=dict(TINY_INTENSITY), lesion_min_mm3={"5": 50.0},
                   state_dict=UNet3D(UNetConfig(**cfg)).state_dict())
    torch.save(weights, tmp / "tiny.pt")
    results = tmp / "results"
    run_evaluation(load_layout(TASK)[:1], "medsam2-3d", results, params={"model": "threshold"},
                   workers=1, report=False)
    return {"segment": tmp / "tiny.pt", "results": results}


def run_session(kind: str, action: str, path: Path | None = None) -> dict:
    """Run ``_midjob.py KIND ACTION [PATH]``; its JSON report, after a clean exit."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    args = [sys.executable, str(SESSION), kind, action] + ([str(path)] if path else [])
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=HANG_S, check=False)
    status = proc.returncode
    why = (f"killed by {signal.Signals(-status).name}" if status < 0 else f"status {status}")
    assert status == 0, (f"{kind} / {action}: the session ended with {why}\n"
                         f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", KINDS)
def test_closing_the_window_mid_job_cancels_and_joins_the_job(kind, inputs):
    out = run_session(kind, "close", inputs.get(kind))
    assert out["errors"] == []
    assert out["joined"], "the job's thread still ran after the window closed"
    assert out["outcomes"] == ["closed"]


def test_viewer_close_mid_propagation_ends_the_job():
    out = run_session("propagate", "viewer-close")
    assert out["errors"] == []
    assert out["joined"]
    assert out["outcomes"] in ([], ["dropped"], ["closed"])  # the panel may be gone first


@pytest.mark.parametrize("kind", KINDS)
def test_deleting_the_layer_mid_job_drops_the_result(kind, inputs):
    out = run_session(kind, "delete", inputs.get(kind))
    assert out["errors"] == []
    assert out["outcomes"] == ["dropped"]
    assert out["layers_added"] == [], "a result was shown without its image"
    assert "dropped: layer" in out["status"]
    dropped = [n for n in out["notes"] if "dropped: layer" in n]
    # surface metrics restart by themselves after a change: no notification for them
    assert len(dropped) == (0 if kind == "surface" else 1)


@pytest.mark.parametrize("action", ["close", "viewer-close"])
def test_closing_mid_download_cancels_joins_and_leaves_nothing_in_the_cache(action, tmp_path):
    pytest.importorskip("huggingface_hub", reason="huggingface_hub (extra 'models') missing")
    cache = tmp_path / "hub-cache"
    out = run_session("download", action, cache)
    assert out["errors"] == []
    assert out["joined"], "the download's thread still ran after the window closed"
    assert out["partial_seen"], "the session did not act in the middle of the download"
    assert out["left"] == [], "a half-written file stayed in the model cache"
    assert out["outcomes"] in ((["closed"],) if action == "close" else ([], ["closed"]))
