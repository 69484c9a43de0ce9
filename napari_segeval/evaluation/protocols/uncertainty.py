"""``uncertainty``: Dice and mIoU in percent, per-case uncertainty, re-scored after filtering.

Recipe (Li et al. 2026; PROTOCOLS.md section 3): evaluate the test split (cases
with ``split == "test"`` and reference labels; when the data set publishes no
labelled test split, every labelled case, and ``summary.json`` says so). Dice
and IoU per class, background included when ``include_background`` (their
recipe), both-empty = 1; case score = mean over classes; reported in percent.
Each case gets an uncertainty score (``score``: ``"auv"``, the default = the
area under the uncertainty-volume curve of the normalized predictive entropy
over the predicted foreground and its one-voxel boundary band, equal to the
mean entropy there (:func:`napari_segeval.uncertainty.auv_from_probabilities`);
``"entropy"`` = mean normalized entropy over the predicted foreground only; or
``"module:function"`` called as ``function(probabilities, labels) -> float``).
``summary.json`` holds the ``unfiltered`` scores, the ``filtered`` scores after
removing the ``floor(f x n + 0.5)`` most uncertain cases for each ``f`` in
``remove_fractions`` (keyed ``"0.05"``, ``"0.10"``), and the correlation of the
per-case foreground Dice with the uncertainty (``dice_vs_uncertainty``).
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
    "score": "auv",
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
    if ref == "auv":
        from napari_segeval.uncertainty import auv_from_probabilities

        u = auv_from_probabilities(res.probabilities, res.labels)
    elif ref == "entropy":
        u = D.per_case_entropy(res.probabilities, res.labels)
    else:
        u = float(C.resolve_factory(ref)(res.probabilities, res.labels))
    return CaseOutput(rows, C.views(case, {"clean": res.labels}), extra={"uncertainty": u},
                      arrays=C.case_arrays(case, {"clean": res.labels}))


def dice_vs_uncertainty(rows: list[dict]) -> dict:
    """Correlation of the per-case mean foreground Dice with the case's uncertainty.

    Examples
    --------
    >>> rows = [{"case": c, "condition": "clean", "structure": s, "dice": d, "uncertainty": u}
    ...         for c, d, u in [("a", .9, .1), ("b", .5, .6), ("c", .7, .3)]
    ...         for s in ("background", "x")]
    >>> dice_vs_uncertainty(rows)["spearman"]
    -1.0
    """
    from napari_segeval.evaluation.summary import case_means
    from napari_segeval.uncertainty import correlation

    fg = sorted({r["structure"] for r in rows} - {"background"})
    dice = case_means(rows, "dice", fg or None)
    score = {r["case"]: float(r["uncertainty"]) for r in rows if "uncertainty" in r}
    cases = sorted({c for c, _ in dice} & set(score))
    out = correlation([score[c] for c in cases], [dice[(c, "clean")] for c in cases])
    return {**out, "structures": fg}


def summarize(rows: list[dict], params: dict) -> dict:
    """Dice/mIoU in percent on all cases and after removing the most uncertain ones."""
    from napari_segeval.evaluation.summary import filtered_by_uncertainty, percent_scores

    splits = sorted({str(r.get("split")) for r in rows})
    fractions = [float(f) for f in params["remove_fractions"]]
    filtered = filtered_by_uncertainty(rows, fractions, ("dice", "iou"))
    return {
        "background_included": bool(params["include_background"]),
        "splits_evaluated": splits,
        "note": ("published test split" if splits == ["test"]
                 else "no labelled test split published: all labelled cases evaluated"),
        "uncertainty_score": params["score"],
        "removal_rule": "floor(fraction * n_cases + 0.5) most uncertain cases removed",
        "unfiltered": percent_scores(rows, ("dice", "iou")),
        "filtered": {f"{f['fraction_removed']:.2f}": f for f in filtered},
        "dice_vs_uncertainty": dice_vs_uncertainty(rows),
    }

#: Deliberate differences of the defaults from the published recipe (word for word
#: in docs/protocols.md, checked by tests/evaluation/test_protocol_docs.py).
DIFFERENCES = (
    ('The per-case score is the mean normalized predictive entropy of the segmenting model '
     "over its predicted structures and a one-voxel boundary band; the paper's Aleatoric "
     'Uncertainty Value is the entropy of the singular-value energy of class features from '
     'a frozen foundation model (MedSAM2).'),
    ('The most uncertain test cases are removed and the rest re-scored (a '
     'selective-evaluation analysis); the paper removes the most uncertain training cases, '
     'retrains, and scores the whole test set.'),
)


PROTOCOL = Protocol(
    name="uncertainty",
    version="1.0",
    defaults=DEFAULTS,
    differences=DIFFERENCES,
    run_case=run_case,
    summarize=summarize,
    select=select,
    description=("Dice and mIoU in percent on the test split (background included unless "
                 "include_background=false), per-case uncertainty, re-scored after removing "
                 "the 5% and 10% most uncertain cases."),
)
