"""Run a protocol over a data set: inline, a local process pool or a Dask cluster, resumable.

Cases run in :func:`evaluate_case` (top-level: spawned and Dask workers import it); this
process writes the records as they arrive.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation import store
from napari_segeval.evaluation.layouts import CaseSpec
from napari_segeval.evaluation.protocols import Protocol
from napari_segeval.evaluation.protocols._params import Models, Params


@dataclass
class RunResult:
    """What a run did: counts, the output folder and the summary."""

    output_dir: Path
    n_cases: int
    n_ok: int
    n_failed: int
    n_skipped: int
    summary: dict

    @property
    def exit_code(self) -> int:
        """0 when every case succeeded, 3 when some failed."""
        return 3 if self.n_failed else 0


def evaluate_case(
    protocol: Protocol, spec: dict, params: Mapping[str, Any] | Params, save_files: bool = False
) -> dict:
    """Run one case and return its record; any failure becomes an error record.

    With ``save_files`` an ok record carries ``payload``, its arrays encoded as files; a
    failure to encode them keeps the scores and says why in ``files_error``.
    """
    t0 = time.perf_counter()
    s = CaseSpec.from_dict(spec)
    record: dict[str, Any] = _identity(protocol, s)
    try:
        if s.error:
            raise SegEvalError(s.error)
        resolved = protocol.resolve_params(params)
        out, rows = _run(protocol, s, resolved)
        record.update(status="ok", rows=rows, views=out.views, extra=out.extra, files={})
        if out.slices:
            record["slices"] = [{"case": s.case_id, **r} for r in out.slices]
        if save_files and out.arrays is not None:
            try:
                record["payload"] = store.encode_arrays(s.case_id, out.arrays)
            except Exception as exc:  # noqa: BLE001 - the scores stand; the record says why
                record["files_error"] = _reason(exc)
    except Exception as exc:  # noqa: BLE001 - every failure becomes an error row
        record.update(status="error", error=_reason(exc) or type(exc).__name__)
    finally:
        release_device_memory()
    record["seconds"] = time.perf_counter() - t0
    return record


def _identity(protocol: Protocol, s: CaseSpec) -> dict[str, Any]:
    """The columns that say which case of which protocol a record or row is."""
    names = ("case", "protocol", "protocol_version", "fold", "split")
    return dict(
        zip(names, (s.case_id, protocol.name, protocol.version, s.fold, s.split), strict=True)
    )


def _reason(exc: Exception) -> str:
    """An exception as a record's reason: a SegEvalError's message, else type: message."""
    return str(exc) if isinstance(exc, SegEvalError) else f"{type(exc).__name__}: {exc}"


def _rows(protocol: Protocol, s: CaseSpec, params: Params, out) -> list[dict]:
    base = {
        **_identity(protocol, s),
        "status": "ok",
        "params": json.dumps(params.to_json(), sort_keys=True, separators=(",", ":")),
        **out.extra,
    }
    rows = [{**base, **r} for r in out.rows]
    if protocol.rows is not None:
        protocol.rows.check(rows)
    return rows


def _run(protocol: Protocol, s: CaseSpec, params: Any):
    """The case's output and rows: one model, or each of ``params.models`` (merged)."""
    from napari_segeval.evaluation.protocols import merge_outputs, run_models

    models = params.models if isinstance(params, Models) else None
    if not models:
        out = protocol.run_case(s, params)
        if protocol.model_kind is not None:  # the reference as typed, as in a run of several
            for r in out.rows:
                r["model"] = params.model
        return out, _rows(protocol, s, params, out)
    each = run_models(protocol, s, params, models)
    rows = [r for p, o in each.values() for r in _rows(protocol, s, p, o)]
    return merge_outputs({m: o for m, (_, o) in each.items()}), rows


def release_device_memory() -> bool:
    """Return cached GPU memory to the driver between cases; False without an initialised CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return False
    gc.collect()  # tensors of the finished case still waiting for the collector
    torch.cuda.empty_cache()
    return True


def _gpu_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count())


def default_workers(n_cases: int) -> tuple[int, int]:
    """``(workers, gpus)``: one worker per GPU when there are GPUs, else one per core."""
    gpus = _gpu_count()
    n = gpus if gpus else (os.cpu_count() or 1)
    return max(1, min(n, n_cases)), gpus


def gpu_for_worker(slot: int, gpus: int, visible: str | None = None) -> str:
    """Worker ``slot``'s ``CUDA_VISIBLE_DEVICES``: the ``slot % gpus``-th of ``visible`` GPUs."""
    ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else []
    i = slot % max(1, gpus)
    return ids[i] if i < len(ids) else str(i)


def _init_worker(threads: int, gpu_queue) -> None:  # pragma: no cover - runs in children
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("MKL_NUM_THREADS", str(threads))
    if gpu_queue is not None:  # before anything in this process initialises CUDA
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu_queue.get()


def _run_inline(protocol, specs, params, cancel, save) -> Iterator[dict]:
    for s in specs:
        if cancel is not None and cancel.is_set():
            return
        yield evaluate_case(protocol, s.to_dict(), params, save)


def _error_record(protocol, s: CaseSpec, reason: str) -> dict:
    return {**_identity(protocol, s), "status": "error", "error": reason}


def _fill(ex, feed, in_flight: dict, limit: int, protocol, params, save) -> None:
    """Submit cases from ``feed`` until ``limit`` are in flight."""
    for s in itertools.islice(feed, max(0, limit - len(in_flight))):
        in_flight[ex.submit(evaluate_case, protocol, s.to_dict(), params, save)] = s


def _run_pool(protocol, specs, params, workers, gpus, cancel, save) -> Iterator[dict]:
    """Process pool (spawn); after a worker crash the rest run one at a time to isolate it."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("spawn")
    pending, size = list(specs), workers
    while pending:
        queue = None
        if gpus:
            queue = ctx.Queue()
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            for i in range(size):
                queue.put(gpu_for_worker(i, gpus, visible))
        threads = max(1, (os.cpu_count() or 1) // size)
        ex = ProcessPoolExecutor(
            size, mp_context=ctx, initializer=_init_worker, initargs=(threads, queue)
        )
        in_flight: dict[Any, Any] = {}
        feed, broken = iter(list(pending)), False
        limit = 2 * size if size > 1 else 1
        try:
            _fill(ex, feed, in_flight, limit, protocol, params, save)
            while in_flight and not broken:
                if cancel is not None and cancel.is_set():
                    return
                done, _ = wait(list(in_flight), timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    s = in_flight.pop(fut)
                    try:
                        rec = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        if size > 1:
                            continue  # unknown culprit: retried one at a time below
                        rec = _error_record(
                            protocol, s, "worker process died (crash or out of memory)"
                        )
                    pending.remove(s)
                    yield rec
                if not broken:
                    _fill(ex, feed, in_flight, limit, protocol, params, save)
        finally:
            ex.shutdown(wait=not broken, cancel_futures=True)
        size = 1


def _run_dask(protocol, specs, params, scheduler, cancel, save) -> Iterator[dict]:
    """Submit every case to a Dask ``distributed`` cluster; GPU tasks ask for ``{"GPU": 1}``."""
    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        from napari_segeval._errors import MissingDependencyError

        raise MissingDependencyError("distributed", "distributed", "--scheduler") from exc
    own = not isinstance(scheduler, Client)
    try:
        client = Client(scheduler) if own else scheduler
    except (OSError, ValueError) as exc:
        raise SegEvalError(f"Dask scheduler {scheduler}: cannot connect ({exc})") from exc
    try:
        workers = client.scheduler_info().get("workers", {})
        gpu = any("GPU" in (w.get("resources") or {}) for w in workers.values())
        futures: dict[Any, CaseSpec] = {}
        resources = {"GPU": 1} if gpu else None
        for s in specs:
            key = f"segeval-{store.case_filename(s.case_id)}-{time.time_ns()}"
            args = (evaluate_case, protocol, s.to_dict(), params, save)
            futures[client.submit(*args, pure=False, key=key, resources=resources)] = s
        for fut in as_completed(list(futures)):
            if cancel is not None and cancel.is_set():
                client.cancel(list(futures))
                return
            try:
                yield fut.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker, not bad input
                yield _error_record(
                    protocol, futures[fut], f"dask task failed: {type(exc).__name__}: {exc}"
                )
    finally:
        if own:
            client.close()


def execute(
    protocol: Protocol,
    specs: Sequence[CaseSpec],
    params: Params,
    output_dir: Path,
    *,
    workers: int | None = None,
    scheduler: Any = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
    done: int = 0,
    save_files: bool = True,
) -> tuple[int, int]:
    """Evaluate ``specs`` (the cases left after ``done`` others) and write each record; returns
    ``(ok, failed)``. ``progress(done, total)`` is called before the first case and after each.
    """
    total = len(specs) + done
    if progress is not None:
        progress(done, total)
    if scheduler is not None:
        records = _run_dask(protocol, specs, params, scheduler, cancel, save_files)
    else:
        if workers is None:
            workers, gpus = default_workers(len(specs))
        else:  # workers given: still one GPU each, round robin
            gpus = _gpu_count() if workers > 1 and len(specs) > 1 else 0
        records = (
            _run_inline(protocol, specs, params, cancel, save_files)
            if workers <= 1 or len(specs) <= 1
            else _run_pool(protocol, specs, params, workers, gpus, cancel, save_files)
        )
    ok = failed = 0
    for rec in records:
        store.write_case(output_dir, rec)
        ok, failed = ok + (rec["status"] == "ok"), failed + (rec["status"] != "ok")
        if progress is not None:
            progress(done + ok + failed, total)
    return ok, failed


__all__ = [
    "RunResult",
    "default_workers",
    "evaluate_case",
    "execute",
    "gpu_for_worker",
    "release_device_memory",
]
