"""Closing napari, or deleting the layer a job reads, while each kind of panel job runs.

The sessions run in subprocesses (``_midjob.py``), so a crash (SIGABRT, SIGSEGV: a
worker calling back into a deleted Qt object) fails the tests instead of killing
pytest. One process runs all the "close" scenarios one after the other (each in a
new viewer), another all the "delete" scenarios: each test reads its scenario's
report and the exit status of its process, so a crash anywhere in a process fails
every test of that process, naming the scenario that was running. Mid-job is
deterministic: the panel's job function waits at a gate until the session has
closed the window or deleted the layer. A release check (``scripts/test.sh --release``):
two napari sessions started in subprocesses.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.gui, pytest.mark.release]

ROOT = Path(__file__).resolve().parents[3]
SESSION = Path(__file__).with_name("_midjob.py")
TASK = ROOT / "sample_data" / "msd_task" / "Task90_AbdomenPhantom"
KINDS = ("propagate", "repropagate", "segment", "attack", "surface", "results", "uncertainty")
HANG_S = 1800  # a hung process fails here instead of stalling the suite (not a speed limit)


def has_hub_client() -> bool:
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        return False
    return True


def make_inputs(tmp: Path) -> dict:
    """What a kind's session needs: ``{kind: path}`` (the others need nothing)."""
    import torch

    from napari_segeval.evaluation import run_evaluation
    from napari_segeval.evaluation.layouts import load_layout
    from napari_segeval.models.dense import BUILTIN_PLANS
    from napari_segeval.models.dense.unet import UNet3D, UNetConfig

    from ...conftest import TINY_INTENSITY

    # the tiny U-Net of tests/conftest.py with one patch covering the CT sample
    # (resampled to 40 x 56 x 56): the session segments it in a second or two
    torch.manual_seed(0)
    cfg = {"in_channels": 1, "num_classes": 6, "base_channels": 2, "levels": 2}
    weights = dict(BUILTIN_PLANS)
    weights.update(
        config=cfg,
        patch_size=[40, 56, 56],
        spacing=[2.5, 2.4, 2.4],
        intensity=dict(TINY_INTENSITY),
        lesion_min_mm3={"5": 50.0},
        state_dict=UNet3D(UNetConfig(**cfg)).state_dict(),
    )
    torch.save(weights, tmp / "tiny.pt")
    results = tmp / "results"
    run_evaluation(
        load_layout(TASK)[:1],
        "medsam2-3d",
        results,
        params={"model": "threshold"},
        workers=1,
        report=False,
    )
    return {"segment": tmp / "tiny.pt", "results": results}


def scenarios(group: str, inputs: dict, tmp: Path) -> list[tuple[str, str, Path | None]]:
    """The ``(kind, action, path)`` scenarios of a process: ``close`` or ``delete``."""
    if group == "delete":
        return [(kind, "delete", inputs.get(kind)) for kind in KINDS]
    out = [(kind, "close", inputs.get(kind)) for kind in KINDS]
    out.append(("propagate", "viewer-close", None))
    if has_hub_client():
        out += [("download", a, tmp / f"hub-cache-{a}") for a in ("close", "viewer-close")]
    return out


def run_sessions(group: str, inputs: dict, tmp: Path) -> dict:
    """Run one ``_midjob.py`` process through ``group``'s scenarios: ``{"reports": {KIND:ACTION:
    report}, "failure": why the process failed or None}``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    args = [f"{k}:{a}" + (f":{p}" if p else "") for k, a, p in scenarios(group, inputs, tmp)]
    proc = subprocess.run(
        [sys.executable, str(SESSION), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=HANG_S,
        check=False,
    )
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith('{"')]
    reports = {f"{x['kind']}:{x['action']}": x for x in lines if "kind" in x}
    started = [x["start"] for x in lines if "start" in x]
    status, failure = proc.returncode, None
    if status not in (0, 3) or not lines or "end" not in lines[-1] or lines[-1]["errors"]:
        why = f"killed by {signal.Signals(-status).name}" if status < 0 else f"status {status}"
        running = started[-1] if started and started[-1] not in reports else "none"
        failure = (
            f"the {group} session ended with {why} while running scenario {running}"
            f" (scenarios finished: {', '.join(reports) or 'none'})\n"
            f"--- last line\n{json.dumps(lines[-1]) if lines else ''}\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return {"reports": reports, "failure": failure}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """What a kind's session needs: ``{kind: path}`` (made once, for both processes)."""
    return make_inputs(tmp_path_factory.mktemp("midjob"))


GROUPS = {"close": "close_sessions", "delete": "delete_sessions"}  # process: its fixture


def shared(request, group: str) -> dict:
    """:func:`run_sessions` of ``group`` once per test run, also under pytest-xdist: the first
    worker that needs it runs the process (a file lock), the others read its result; a worker
    that would wait for it runs the other processes the run needs meanwhile."""
    tmp_path_factory = request.getfixturevalue("tmp_path_factory")

    def run(name: str) -> dict:
        return run_sessions(
            name, request.getfixturevalue("inputs"), tmp_path_factory.mktemp(f"midjob-{name}")
        )

    if request.getfixturevalue("worker_id") == "master":
        return run(group)
    from filelock import FileLock, Timeout

    def produce(name: str, wait: bool) -> dict | None:
        done = tmp_path_factory.getbasetemp().parent / f"midjob-{name}.json"
        lock = FileLock(f"{done}.lock")
        try:
            lock.acquire(timeout=-1 if wait else 0)
        except Timeout:
            return None
        try:
            if not done.is_file():
                done.write_text(json.dumps(run(name)))
            return json.loads(done.read_text())
        finally:
            lock.release()

    result = produce(group, wait=False)
    if result is None:
        for name, fixture in GROUPS.items():
            if name != group and any(
                fixture in getattr(item, "fixturenames", ()) for item in request.session.items
            ):
                produce(name, wait=False)
        result = produce(group, wait=True)
    return result


@pytest.fixture(scope="module")
def close_sessions(request):
    return shared(request, "close")


@pytest.fixture(scope="module")
def delete_sessions(request):
    return shared(request, "delete")


def report(sessions: dict, kind: str, action: str) -> dict:
    """The scenario's report, after its process ended by itself with no error left over."""
    assert sessions["failure"] is None, f"{kind} / {action}: {sessions['failure']}"
    assert f"{kind}:{action}" in sessions["reports"], f"{kind} / {action} did not run"
    return sessions["reports"][f"{kind}:{action}"]


@pytest.mark.parametrize("kind", KINDS)
def test_closing_the_window_mid_job_cancels_and_joins_the_job(kind, close_sessions):
    out = report(close_sessions, kind, "close")
    assert out["errors"] == []
    assert out["joined"], "the job's thread still ran after the window closed"
    assert out["outcomes"] == ["closed"]


def test_viewer_close_mid_propagation_ends_the_job(close_sessions):
    out = report(close_sessions, "propagate", "viewer-close")
    assert out["errors"] == []
    assert out["joined"]
    assert out["outcomes"] in ([], ["dropped"], ["closed"])  # the panel may be gone first


@pytest.mark.parametrize("action", ["close", "viewer-close"])
def test_closing_mid_download_cancels_joins_and_leaves_nothing_in_the_cache(action, close_sessions):
    pytest.importorskip("huggingface_hub", reason="huggingface_hub (extra 'models') missing")
    out = report(close_sessions, "download", action)
    assert out["errors"] == []
    assert out["joined"], "the download's thread still ran after the window closed"
    assert out["partial_seen"], "the session did not act in the middle of the download"
    assert out["left"] == [], "a half-written file stayed in the model cache"
    assert out["outcomes"] in ((["closed"],) if action == "close" else ([], ["closed"]))


@pytest.mark.parametrize("kind", KINDS)
def test_deleting_the_layer_mid_job_drops_the_result(kind, delete_sessions):
    out = report(delete_sessions, kind, "delete")
    assert out["errors"] == []
    assert out["outcomes"] == ["dropped"]
    assert out["layers_added"] == [], "a result was shown without its image"
    assert "dropped: layer" in out["status"]
    dropped = [n for n in out["notes"] if "dropped: layer" in n]
    # surface metrics restart by themselves after a change: no notification for them
    assert len(dropped) == (0 if kind == "surface" else 1)
