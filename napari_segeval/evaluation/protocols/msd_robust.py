"""``msd-robust``: dense model, clean and under attacks; Dice, Dice drop, robust fraction.

Recipe (Daza et al. 2021, corrected; PROTOCOLS.md section 1): the model's own
preprocessing (resampling, foreground clip + z-score), Gaussian sliding window
(``overlap``), post-processing; the whole volume is scored (not one patch).
Each entry of ``attacks`` is a condition: ``{"name": "pgd", "eps": 0.05,
"steps": 5, "restarts": 5}`` (epsilon in normalized units; ``eps_raw`` in the
rows gives it in raw units, HU for CT), run by :mod:`napari_segeval.attacks`
with the reference labels as target and the lowest-Dice iterate kept (see
:func:`napari_segeval.evaluation.protocols._dense.run_attack`). A case is robust under an attack when its
attacked Dice (mean over structures) is above ``robust_factor`` x the task's
mean clean Dice, computed once over the clean run.
"""

from __future__ import annotations

from napari_segeval.evaluation.protocols import CaseOutput, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _dense as D

DEFAULTS = {
    "model": "builtin-ct",
    "device": None,
    "overlap": 0.5,
    "mirror": False,
    "postprocess": True,
    "attacks": [],
    "robust_factor": 0.5,
    "empty": "one",
    "surface": False,
    "tolerance_mm": 2.0,
    "channel": 0,
}


def run_case(spec, params: dict) -> CaseOutput:
    """Clean prediction plus one prediction per attack, scored per structure."""
    case = C.load_case(spec, channel=int(params["channel"]))
    model = C.dense_model(str(params["model"]), params.get("device"))
    structures = dict(case.structures or getattr(model, "structures", {}) or {})
    kw = {"tolerance_mm": float(params["tolerance_mm"]), "empty": str(params["empty"]),
          "surface": bool(params["surface"])}
    clean = D.segment(model, case, params)
    preds = {"clean": clean.labels}
    rows = C.score(case.labels, clean.labels, case.spacing, structures, "clean", **kw)
    eps_raw = {"clean": 0.0}
    for attack in params["attacks"]:
        cond, preds_a, eps = D.run_attack(model, case, attack, params)
        preds[cond], eps_raw[cond] = preds_a, eps
        rows += C.score(case.labels, preds_a, case.spacing, structures, cond, **kw)
    for r in rows:
        r["eps_raw"] = eps_raw[r["condition"]]
    return CaseOutput(rows, C.views(case, preds))


def summarize(rows: list[dict], params: dict) -> dict:
    """Mean Dice per structure and task, Dice drop and robust fraction per attack."""
    from napari_segeval.evaluation.summary import robustness

    return robustness(rows, factor=float(params["robust_factor"]))


PROTOCOL = Protocol(
    name="msd-robust",
    version="1.0",
    defaults=DEFAULTS,
    run_case=run_case,
    summarize=summarize,
    description=("Dense model (resample, clip/z-score, Gaussian sliding window, "
                 "post-processing), clean and under attacks: mean Dice per structure and "
                 "task, Dice drop, fraction of robust cases (attacked Dice > 0.5 x task "
                 "mean clean Dice)."),
)
