"""One call to evaluate a data set: :func:`run_evaluation`; :func:`finalize` rebuilds outputs."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from napari_segeval import __version__
from napari_segeval._errors import ReadError, SegEvalError, WriteError
from napari_segeval.evaluation import store
from napari_segeval.evaluation.layouts import CaseSpec, load_layout
from napari_segeval.evaluation.protocols import Protocol, get_protocol
from napari_segeval.evaluation.protocols._params import Models
from napari_segeval.evaluation.rows import SLICES
from napari_segeval.evaluation.runner import RunResult, execute


def run_evaluation(
    data: str | os.PathLike | Sequence[CaseSpec],
    protocol: str | Protocol,
    output_dir: str | os.PathLike,
    *,
    params: Mapping[str, Any] | None = None,
    preset: str | None = None,
    layout: str | None = None,
    layout_options: Mapping[str, Any] | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    resume: bool = True,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
    report: bool = True,
    save_predictions: bool = True,
) -> RunResult:
    """Evaluate every case of a data set with a protocol and write the results folder.

    Parameters
    ----------
    data
        A data-set folder (parsed with ``layout``) or ready case records.
    protocol
        Registered name (``"medsam2-3d"`` ...) or a :class:`Protocol`.
    output_dir
        Results folder (created).
    params
        Protocol parameter overrides (unknown names are refused).
    preset
        A paper preset of the protocol; ``params`` apply on top of it.
    layout, layout_options
        Layout name (detected when None) and its options (``images``, ``labels``,
        ``camus_mode``).
    workers
        Local worker processes (default: one per GPU, else one per core); 1 runs here.
    scheduler
        A Dask scheduler address (``tcp://host:8786``) or client: cases run there.
    resume
        Skip cases with a finished record (default); False discards old records.
    progress
        ``progress(done, total)`` before the first case and after every case.
    cancel
        Stop submitting and return when set (finished cases are kept).
    report
        Write ``report.html``.
    save_predictions
        Save each case's label maps (and attack images) under ``DIR/predictions/<case>/``;
        not part of the recipe a resumed run must match.

    Returns
    -------
    RunResult

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from napari_segeval.evaluation.layouts import CaseSpec
    >>> bad = [CaseSpec("broken", ("/missing.nii.gz",), "/missing_seg.nii.gz")]
    >>> r = run_evaluation(bad, "medsam2-3d", tempfile.mkdtemp(), workers=1, report=False)
    >>> r.n_failed, r.summary["failed"][0]["case"]
    (1, 'broken')
    """
    proto = get_protocol(protocol)
    p = proto.resolve_params(params, preset)
    out = Path(output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(
            f"{out}: cannot create the results folder ({exc.strerror or exc})"
        ) from exc
    if isinstance(data, (str, os.PathLike)):
        specs = load_layout(
            Path(data), layout, **{**proto.layout_options, **dict(layout_options or {})}
        )
        source = str(Path(data).absolute())
    else:
        specs = [s if isinstance(s, CaseSpec) else CaseSpec.from_dict(s) for s in data]
        source = specs[0].root if specs else ""
    run_info = {
        "protocol": proto.name,
        "protocol_version": proto.version,
        "preset": preset,
        "params": p.to_json(),
        "data": source,
        "layout": specs[0].layout if specs else layout,
        "napari_segeval": __version__,
        "save_predictions": bool(save_predictions),
    }
    if "precision" in p.names():  # what auto chose here: said, not part of the recipe
        run_info["precision"] = p.precisions()
    store.check_run(out, run_info, resume)
    if not resume:
        store.clear_cases(out)
    if proto.needs_folds:
        from napari_segeval.evaluation.splits import ensure_folds

        ensure_folds(specs, p.folds, p.seed, out, cv_splits=p.cv_splits, holdout=p.holdout)
    chosen = proto.cases(specs, p)
    if not chosen:
        raise SegEvalError(
            f"{source}: no case the protocol {proto.name} can evaluate (it needs reference labels)"
        )
    if proto.prepare is not None:
        proto.prepare(chosen, p, out)
    store.write_json(out / "cases.json", {"cases": [s.to_dict() for s in chosen]})
    todo = [s for s in chosen if not store.is_done(out, s.case_id)]
    done = len(chosen) - len(todo)
    execute(
        proto,
        todo,
        p,
        out,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
        cancel=cancel,
        done=done,
        save_files=save_predictions,
    )
    result = finalize(out, proto, report=report)
    result.n_skipped = done
    return result


def finalize(
    output_dir: str | os.PathLike, protocol: str | Protocol | None = None, *, report: bool = True
) -> RunResult:
    """Write ``results.csv``, ``summary.json`` (and ``report.html``) from the case records
    (what ``segeval report`` runs).
    """
    from napari_segeval.metrics import ResultsTable

    out = Path(output_dir)
    run_info = store.read_json(out / "run.json")
    try:
        proto = get_protocol(protocol or run_info["protocol"])
        params = proto.params.stored(run_info["params"])
    except (KeyError, TypeError) as exc:
        what = f"no {exc}" if isinstance(exc, KeyError) else "not a JSON object"
        raise ReadError(f"{out / 'run.json'}: not a results record ({what})") from exc
    cases, records = store.load_records(out)
    rows = store.result_rows(records)
    ResultsTable(rows).to_csv(out / "results.csv", overwrite=True)
    slices = store.slice_rows(records)
    if slices:
        SLICES.check(slices)
        ResultsTable(slices).to_csv(out / "slices.csv", overwrite=True)
    failed = [
        {"case": r["case"], "error": r.get("error", "")} for r in records if r.get("status") != "ok"
    ]
    ok_rows = [r for r in rows if r.get("status") == "ok"]
    seconds = [float(r.get("seconds", 0.0)) for r in records]
    summary = {
        **run_info,
        "n_cases": len(cases),
        "n_finished": len(records),
        "n_ok": len(records) - len(failed),
        "n_failed": len(failed),
        "n_missing": len(cases) - len(records),
        "failed": failed,
        # ok cases whose prediction files could not be saved (their scores stand)
        "files_not_saved": [
            {"case": r["case"], "error": r["files_error"]}
            for r in records
            if r.get("status") == "ok" and r.get("files_error")
        ],
        "seconds_per_case": (sum(seconds) / len(seconds)) if seconds else None,
        "differences_from_paper": list(proto.differences_for(run_info.get("preset"))),
        "results": _results(proto, ok_rows, params),
    }
    store.write_json(out / "summary.json", summary)
    if report:
        from napari_segeval.evaluation.report import write_report

        write_report(out)
    return RunResult(out, len(cases), summary["n_ok"], len(failed), 0, summary)


def _results(proto: Protocol, rows: list[dict], params: Any) -> dict:
    """The protocol's aggregation; with several models, one per model and their comparison."""
    if not rows:
        return {}
    models = params.models if isinstance(params, Models) else None
    if not models:
        return proto.summarize(rows, params)
    from napari_segeval.evaluation.curves import round_rows
    from napari_segeval.evaluation.summary import by_model

    each = {m: [r for r in rows if r.get("model") == m] for m in models}
    return {
        "by_model": {
            m: proto.summarize(r, replace(params, model=m, models=None))
            for m, r in each.items()
            if r
        },
        "comparison": by_model(round_rows(rows) if proto.has_rounds else rows),
    }


__all__ = ["finalize", "run_evaluation"]
