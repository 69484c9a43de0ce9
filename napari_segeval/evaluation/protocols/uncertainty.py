"""``uncertainty``: Dice and mIoU in percent, and what per-case uncertainty does to them
(Li et al., CVPR 2026; ``docs/protocols.md``): ``analysis="selective"`` judges the model's
own uncertainty, ``"filter-training"`` (:mod:`._li2026`) is the paper's loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval._names import CLEAN
from napari_segeval.evaluation._report_sections import uncertainty_tables
from napari_segeval.evaluation.protocols import CaseOutput, Preset, Protocol
from napari_segeval.evaluation.protocols import _common as C
from napari_segeval.evaluation.protocols import _dense as D
from napari_segeval.evaluation.protocols import _li2026 as L
from napari_segeval.evaluation.protocols._params import Params, choice, differences, listed, number
from napari_segeval.evaluation.rows import UNCERTAIN

ANALYSES = ("selective", "filter-training")


@dataclass(frozen=True)
class UncertaintyParams(Params):
    """``uncertainty``'s parameters (``auv_*``, ``duo*``, ``train_*``, ``holdout`` and
    ``threads`` are the ``filter-training`` analysis').
    """

    analysis: str = choice("selective", ANALYSES)
    model: str | None = "builtin-ct"
    device: str | None = None
    overlap: float = number(0.5, "in [0, 1)", lambda v: 0 <= v < 1)
    mirror: bool = False
    postprocess: bool = True
    include_background: bool = True
    score: str = "entropy-band"
    remove_fractions: list = listed(0.05, 0.10)
    removal_rule: str = "round"
    channel: int = 0
    seed: int = number(0, "a whole number", whole=True)
    holdout: float = 0.33
    auv_model: str = "auto"
    auv_checkpoint: str | None = None
    auv_layout: str = "D_HW"
    auv_energy_power: float = 2
    auv_aggregate: str = "sum"
    auv_grid: Any = None
    auv_ct_mapping: str = "window"
    auv_resize: str = "float"
    duo: bool = False
    duo_alpha: float = 0.5
    train_iterations: int = 300
    train_batch: int = 2
    train_lr: float = 0.003
    train_optimizer: str = "adamw-cosine"
    train_patch: list = listed(32, 48, 48)
    train_width: int = 8
    threads: int = 1

    def image_channel(self) -> int:
        """The ``channel`` parameter."""
        return self.channel

    def check(self) -> None:
        """The fields' rules, and the old score name ``auv`` refused with its new name."""
        super().check()
        if self.score == "auv":
            raise SegEvalError(_AUV_RENAMED)


_AUV_RENAMED = (
    "score 'auv' is now called 'entropy-band' (it is the model's mean predictive "
    "entropy, not the paper's Aleatoric Uncertainty Value; for that, use "
    "--preset li2026)"
)


def select(specs, params: UncertaintyParams) -> list:
    """Selective: labelled test cases (every labelled case when none). Filter-training: the test split."""
    if params.analysis == "filter-training":
        return L.select(specs, params)
    test = [s for s in specs if s.split == "test" and (s.labels or s.error)]
    return test or [s for s in specs if s.labels or s.error]


def prepare(specs, params: UncertaintyParams, output_dir) -> None:
    """Filter-training only: AUV, filtered training lists and one model per condition."""
    if params.analysis == "filter-training":
        L.prepare(specs, params, output_dir)


def case_uncertainty(score: str, probabilities: np.ndarray, labels: np.ndarray) -> float:
    """The selective analysis' per-case score of ``probabilities`` ``(K, *spatial)``."""
    if score == "auv":
        raise SegEvalError(_AUV_RENAMED)
    if score == "entropy-band":
        from napari_segeval.uncertainty import entropy_band_score

        return entropy_band_score(probabilities, labels)
    if score == "entropy":
        return D.per_case_entropy(probabilities, labels)
    return float(C.resolve_factory(score)(probabilities, labels))


def run_case(spec, params: UncertaintyParams) -> CaseOutput:
    """Selective: predict with probabilities, score classes, attach the case's uncertainty."""
    if params.analysis == "filter-training":
        return L.run_case(spec, params)
    case = C.load_case(spec, channel=int(params.channel))
    model = C.dense_model(str(params.model), params.device)
    res = D.segment(model, case, params, probabilities=True)
    rows = L.class_rows(case, model, res.labels, CLEAN, params)
    u = case_uncertainty(str(params.score), res.probabilities, res.labels)
    return C.output(case, rows, {CLEAN: res.labels}, extra={"uncertainty": u})


def dice_vs_uncertainty(rows: list[dict]) -> dict:
    """Correlation of the per-case mean foreground Dice with the case's uncertainty."""
    from napari_segeval.evaluation.summary import dice_and_uncertainty
    from napari_segeval.uncertainty import correlation

    x, y, fg = dice_and_uncertainty(rows)
    return {**correlation(x, y), "structures": fg}


def selective_summary(rows: list[dict], params: UncertaintyParams) -> dict:
    """``all_cases``, ``retained`` per fraction set aside, ``risk_coverage`` (failure detection)."""
    from napari_segeval.evaluation.summary import (
        case_means,
        filtered_by_uncertainty,
        percent_scores,
    )
    from napari_segeval.uncertainty import FAILURE_BELOW_STRUCTURE, failure_detection

    fractions = [float(f) for f in params.remove_fractions]
    kept = filtered_by_uncertainty(rows, fractions, rule=str(params.removal_rule))
    dice = {c: v for (c, _), v in case_means(rows, "dice").items()}
    score = {r["case"]: float(r["uncertainty"]) for r in rows if "uncertainty" in r}
    cases = sorted(c for c in score if c in dice)
    fd = failure_detection(
        [score[c] for c in cases], [dice[c] for c in cases], failure_below=FAILURE_BELOW_STRUCTURE
    )
    return {
        "all_cases": percent_scores(rows),
        "retained": {f"{k['fraction_removed']:.2f}": k for k in kept},
        "risk_coverage": {
            **fd.to_dict(),
            "definition": (
                "true risk = 1 - the case's mean Dice (over classes, as a fraction); "
                "the cases with a score at most t are kept, tied scores together; "
                "coverage = kept share, selective_risk = mean true risk of the kept, "
                "generalized_risk = their summed true risk / n, from coverage 1 to "
                "the end point at coverage 0; AURC and AUGRC = trapezoid areas; "
                "optimal = the true risk as the score; random = the mean true risk; "
                "a case fails below a mean Dice of failure_below "
                "(napari_segeval.uncertainty.failure)"
            ),
        },
        "dice_vs_uncertainty": dice_vs_uncertainty(rows),
    }


def summarize(rows: list[dict], params: UncertaintyParams) -> dict:
    """Selective evaluation, or the filter-training conditions."""
    if params.analysis == "filter-training":
        return L.summarize(rows, params)
    splits = sorted({str(r.get("split")) for r in rows})
    return {
        "analysis": "selective",
        "background_included": bool(params.include_background),
        "splits_evaluated": splits,
        "note": (
            "published test split"
            if splits == ["test"]
            else "no labelled test split published: all labelled cases evaluated"
        ),
        "uncertainty_score": params.score,
        "removal_rule": (
            "floor(fraction * n_cases + 0.5) most uncertain cases set aside"
            if params.removal_rule == "round"
            else "cases above the (1 - fraction) empirical quantile set aside"
        ),
        **selective_summary(rows, params),
    }


#: Deliberate differences of the defaults from the published recipe (docs/protocols.md).
DIFFERENCES = differences("uncertainty")

#: The paper's loop on the built-in trainer (docs/protocols.md "uncertainty preset li2026").
LI2026 = Preset(
    name="li2026",
    params={
        "analysis": "filter-training",
        "include_background": True,
        "postprocess": False,
        "mirror": False,
        "remove_fractions": [0.05, 0.10],
        "removal_rule": "quantile",
        "auv_model": "auto",
        "auv_layout": "D_HW",
        "auv_energy_power": 1,
        "auv_aggregate": "sum",
        "auv_grid": [96, 96, 96],
        "auv_ct_mapping": "minmax",
        "auv_resize": "pillow",
        "duo": True,
        "duo_alpha": 0.5,
        "train_optimizer": "sgd-poly",
        "train_lr": 0.01,
        "train_batch": 2,
    },
    source=(
        "Li et al., Delving Aleatoric Uncertainty in Medical Image Segmentation via "
        "Vision Foundation Models, CVPR 2026 (arXiv 2604.10963), and the authors' "
        "released semantic-perception-scale code (github.com/Lry777/CVPR_AUV)"
    ),
    differences=differences("uncertainty li2026"),
)


PROTOCOL = Protocol(
    rows=UNCERTAIN,
    name="uncertainty",
    version="2.2",
    params=UncertaintyParams,
    differences=DIFFERENCES,
    presets={"li2026": LI2026},
    run_case=run_case,
    summarize=summarize,
    select=select,
    prepare=prepare,
    report_section=uncertainty_tables,  # its own HTML section (empty without either analysis)
    description=(
        "Dice and mIoU in percent (background included unless "
        "include_background=false). Defaults: selective evaluation of the model's "
        "own uncertainty on the test split (Dice of the cases retained after setting "
        "aside the 5% and 10% most uncertain, risk-coverage curve, AURC). Preset "
        "li2026: the paper's loop - AUV of the training cases from a frozen "
        "promptable model, the most uncertain training cases removed, the built-in "
        "3D U-Net retrained, and trained once more with the DUO loss; test-set "
        "Dice per condition."
    ),
)
