"""Worker side of the *Results* panel (no Qt): open a folder, load a row's case."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from napari_segeval._names import CLEAN
from napari_segeval._widgets.results.layers import layer_specs


def open_job(path: str, progress=None, cancel=None):
    """Worker side of *Open…*: read and check the folder (records, versions); warm napari up."""
    from napari_segeval.evaluation.results import ResultsFolder

    folder = ResultsFolder(path)
    # a tiny layer of each kind: napari's first layer's imports are paid here, in the
    # worker, not by the first row selected (only a head start: errors are ignored)
    with contextlib.suppress(Exception):
        import numpy as np
        from napari.layers import Image, Labels

        Image(np.zeros((2, 2, 2), np.float32), scale=(1.0, 1.0, 1.0))
        Labels(np.zeros((2, 2, 2), np.uint8), scale=(1.0, 1.0, 1.0))
    return folder


@dataclass
class Missing:
    """Missing files, returned by the worker as a value (an exception would be an error)."""

    error: Any


def throttled(progress, interval: float = 0.25):
    """``progress`` called at most every ``interval`` seconds and at the end (repaints are slow)."""
    import time

    if progress is None:
        return None
    last = [-interval]

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if done >= total or now - last[0] >= interval:
            last[0] = now
            progress(done, total)

    return report


def row_label(loaded, row: dict) -> int | None:
    """Label id of a row's structure (from the row, else by name in the case)."""
    if row.get("label") is not None:
        return int(row["label"])
    names = {v: k for k, v in loaded.case.structures.items()}
    return names.get(row["structure"])


def focus_of(row: dict) -> str | None:
    """The prediction a row puts in focus: its attack, or (several models) its prediction."""
    name = str(row["key"])
    return None if name == CLEAN else name


def row_job(folder, row: dict, shown, progress=None, cancel=None):
    """Worker side of a row selection (loads the case unless ``shown`` is it): ``(row, loaded,
    layer specs or None, the worst or riskiest slice, counters, risks)`` or :class:`Missing`."""
    from napari_segeval.evaluation.results import MissingFilesError
    from napari_segeval.metrics import worst_slice, worst_slice_from_counts

    specs, counted = None, {}
    loaded = shown
    if loaded is None:
        focus = focus_of(row)
        try:
            loaded = folder.load(row["case"], focus, progress=throttled(progress), cancel=cancel)
        except MissingFilesError as exc:
            return Missing(exc)
        counted = dict(loaded.counters)
        ids = next(iter(counted.values())).reference_labels() if counted else None
        specs = layer_specs(loaded, ids)  # structure ids etc. computed here, not in the GUI
    label = row_label(loaded, row)
    risks = (
        folder.case_risks(row["case"], row["condition"], row.get("model"))
        if row.get("round") in (None, 0)
        else {}
    )
    risk = risks.get(label) if label is not None else None
    no_reference = loaded.case.labels is None
    if no_reference and risk is not None and risk.riskiest_slice is not None:
        return row, loaded, specs, risk.riskiest_slice, counted, risks
    name = str(row["key"])
    pred = loaded.predictions.get(name)
    first, second = loaded.pair
    key = CLEAN if name == first else "attacked"
    worst = None
    if label is not None and pred is not None and loaded.case.labels is not None:
        if key in counted and name in (first, second):
            if loaded.case.labels.ndim >= 3:  # counted already: no second pass
                worst = worst_slice_from_counts(counted[key].slice_counts(label))
        else:
            worst = worst_slice(loaded.case.labels, pred, label)
    return row, loaded, specs, worst, counted, risks


def pair_job(loaded, second: str, progress=None, cancel=None):
    """Worker side of a round stepped to: ``(loaded, second, counters)`` of the first
    prediction and ``second`` (nothing is read)."""
    from napari_segeval.evaluation.loaded import counters

    first = loaded.pair[0] or CLEAN
    return loaded, second, counters(loaded.case, loaded.predictions, second, first)
