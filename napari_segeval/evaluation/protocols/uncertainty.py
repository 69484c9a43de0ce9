"""``uncertainty``: Dice and mIoU in percent, per-case uncertainty, re-scored after filtering.

Recipe (Li et al. 2026; PROTOCOLS.md section 3): evaluate the test split (cases
with ``split == "test"`` and reference labels; when the data set publishes no
labelled test split, every labelled case, and ``summary.json`` says so). Dice
and IoU per class, background included when ``include_background`` (their
recipe), both-empty = 1; case score = mean over classes; reported in percent.
Each case gets an uncertainty score (``score``: ``"entropy"`` = mean normalized
predictive entropy over the predicted foreground, or ``"module:function"``
called as ``function(probabilities, labels) -> float``); the scores are
re-computed after removing the ``ceil(f x n)`` most uncertain cases for each
``f`` in ``remove_fractions``.
"""

from __future__ import annotations

import numpy as np

from napari_segeval.evaluation.protocols import CaseOutput, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _dense as D

DEFAULTS = {
    "model": "builtin-ct",
    "device": None,
    "overlap": 0.5,
    "mirror": False,
    "postprocess": True,
    "include_background": True,
    "score": "entropy",
    "remove_fractions": [0.05, 0.10],
    "channel": 0,
}


def select(specs, params):
    """Labelled test cases, or every labelled case when there are none."""
    test = [s for s in specs if s.split == "test" and (s.labels or s.error)]
    return test or [s for s in specs if s.labels or s.error]


def run_case(spec, params: dict) -> CaseOutput:
    """Predict with probabilities, score classes, attach the case's uncertainty."""
    case = C.load_case(spec, channel=int(params["channel"]))
    model = C.dense_model(str(params["model"]), params.get("device"))
    res = D.segment(model, case, params, probabilities=True)
    structures = dict(case.structures or getattr(model, "structures", {}) or {})
    if params["include_background"]:
        structures = {0: "background", **structures}
    rows = C.score(case.labels, np.asarray(res.labels), case.spacing, structures, "clean",
                   empty="one", surface=False)
    ref = str(params["score"])
    if ref == "entropy":
        u = D.per_case_entropy(res.probabilities, res.labels)
    else:
        u = float(C.resolve_factory(ref)(res.probabilities, res.labels))
    return CaseOutput(rows, C.views(case, {"clean": res.labels}), extra={"uncertainty": u})


def summarize(rows: list[dict], params: dict) -> dict:
    """Dice/mIoU in percent on all cases and after removing the most uncertain ones."""
    from napari_segeval.evaluation.summary import filtered_by_uncertainty

    splits = sorted({str(r.get("split")) for r in rows})
    fractions = [0.0, *[float(f) for f in params["remove_fractions"]]]
    return {
        "background_included": bool(params["include_background"]),
        "splits_evaluated": splits,
        "note": ("published test split" if splits == ["test"]
                 else "no labelled test split published: all labelled cases evaluated"),
        "uncertainty_score": params["score"],
        "filtering": filtered_by_uncertainty(rows, fractions, ("dice", "iou")),
    }


PROTOCOL = Protocol(
    name="uncertainty",
    version="1.0",
    defaults=DEFAULTS,
    run_case=run_case,
    summarize=summarize,
    select=select,
    description=("Dice and mIoU in percent on the test split (background included unless "
                 "include_background=false), per-case uncertainty, re-scored after removing "
                 "the 5% and 10% most uncertain cases."),
)
