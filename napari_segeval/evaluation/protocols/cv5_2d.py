"""``cv5-2d``: 5-fold cross-validated 2D segmentation, mDSC/mIoU/mRec/mPrec in percent.

Recipe (Borst et al. 2026; PROTOCOLS.md section 4): folds from the data set's
published splits, else a seeded k-fold saved as ``splits.json``. Every case is
scored by the model of its fold (``model`` may contain ``{fold}``, e.g. one
checkpoint per fold, ``"runs/fold{fold}.pt"``). Dice (2|A∩B|/(|A|+|B|), not the
published |A∪B| variant), IoU, recall and precision per class (background
excluded unless ``include_background``; both-empty per ``empty``), averaged
over classes within a fold, then mean +- std (ddof=1) over folds, in percent.

The model is a dense model reference (see
:func:`napari_segeval.evaluation.protocols._common.dense_model`): anything with
``segment(case, probabilities=False) -> result.labels`` works. No 2D built-in
model ships yet, so ``model`` must be given.
"""

from __future__ import annotations

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.protocols import CaseOutput, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _dense as D

DEFAULTS = {
    "model": None,
    "device": None,
    "folds": 5,
    "seed": 0,
    "include_background": False,
    "empty": "one",
}


def run_case(spec, params: dict) -> CaseOutput:
    """Segment a 2D image with its fold's model and score every class."""
    if not params.get("model"):
        raise SegEvalError("cv5-2d needs a 2D model: --param model=REF "
                           "(a file, folder or module:factory; '{fold}' is replaced)")
    case = C.load_case(spec)
    ref = str(params["model"]).replace("{fold}", str(spec.fold))
    model = C.dense_model(ref, params.get("device"))
    res = D.segment(model, case, params)
    structures = dict(case.structures or getattr(model, "structures", {}) or {})
    if params["include_background"]:
        structures = {0: "background", **structures}
    rows = C.score(case.labels, res.labels, case.spacing, structures, "clean",
                   empty=str(params["empty"]), surface=False)
    return CaseOutput(rows, C.views(case, {"clean": res.labels}))


def summarize(rows: list[dict], params: dict) -> dict:
    """Per class and class-averaged mean +- std over folds, in percent."""
    from napari_segeval.evaluation.summary import cross_validation

    return {"background_included": bool(params["include_background"]),
            "names": {"dice": "mDSC", "iou": "mIoU", "recall": "mRec", "precision": "mPrec"},
            **cross_validation(rows)}


PROTOCOL = Protocol(
    name="cv5-2d",
    version="1.0",
    defaults=DEFAULTS,
    run_case=run_case,
    summarize=summarize,
    needs_folds=True,
    description=("5-fold cross-validated 2D segmentation: mDSC, mIoU, mRec, mPrec in "
                 "percent per class and averaged, mean +- std over folds."),
)
