"""Attack one case end to end: clean prediction, attack, outputs in raw units, Dice tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol

import numpy as np

from napari_segeval._errors import SegEvalError
from napari_segeval._json import json_safe
from napari_segeval.attacks._problem import per_case_norm
from napari_segeval.attacks.budget import Budget
from napari_segeval.attacks.config import AttackConfig, AttackNotApplicable, not_applicable
from napari_segeval.attacks.core import run_attack


@dataclass
class AttackResult:
    """Everything one attack on one case produced.

    Attributes
    ----------
    perturbed_image : numpy.ndarray
        Clean raw image + perturbation in raw units, float32, on the case's grid.
    perturbation : numpy.ndarray
        The perturbation in raw units (HU, grey levels), float32, case grid.
    perturbation_normalized : numpy.ndarray
        The perturbation the model saw (normalized units, model grid/layout; a
        one-frame stack ``(1, H, W[, C])`` for a 2D image).
    clean_prediction, attacked_prediction : numpy.ndarray
        Label maps on the case's grid (``(H, W)`` for a 2D image).
    clean_rows, attacked_rows : list of dict
        Per-structure metric rows (:func:`napari_segeval.metrics.structure_table`)
        against the reference labels, or against the clean prediction when the
        case has none (``reference`` says which).
    budget : Budget
        Epsilon in normalized and raw units.
    perturbation_norm : dict
        Norm of the perturbation the model saw (normalized) and in raw units.
    params : dict
        Attack configuration, target description, passes used, reference kind.
    history : list of dict
        Per evaluation: loss and Dice (of the model-grid prediction vs the target).
    """

    perturbed_image: np.ndarray
    perturbation: np.ndarray
    perturbation_normalized: np.ndarray
    clean_prediction: np.ndarray
    attacked_prediction: np.ndarray
    clean_rows: list
    attacked_rows: list
    budget: Budget
    perturbation_norm: dict
    params: dict
    history: list = field(default_factory=list)

    def dice_records(self, case_id: str = "case") -> list[dict]:
        """Rows ``{case, condition, label, name, clean, attacked}`` for robustness summaries."""
        cond = condition_name(self.params["attack"])
        attacked = {r["label"]: r["dice"] for r in self.attacked_rows}
        return [
            {
                "case": case_id,
                "condition": cond,
                "label": r["label"],
                "name": r["name"],
                "clean": r["dice"],
                "attacked": attacked.get(r["label"], float("nan")),
            }
            for r in self.clean_rows
        ]


#: Options named in a condition label when they differ from these defaults.
_NAMED_OPTIONS = {
    "schedule": ("constant", "paper", "rescaled"),
    "select": ("dice",),
    "loss": ("ce",),
}


def condition_name(attack: dict) -> str:
    """Short condition label, e.g. ``"pgd-linf eps=0.05 steps=10"``.

    Iterative attacks name their steps (queries for Square); a non-default
    ``schedule`` or ``select``, and Square's loss, are named too, so that two
    variants of one attack stay two conditions.

    Examples
    --------
    >>> condition_name({"attack": "fgsm", "norm": "linf", "eps": 0.1, "steps": 1})
    'fgsm-linf eps=0.1'
    >>> condition_name({"attack": "apgd-ce", "norm": "linf", "eps": 0.1, "steps": 5,
    ...                 "schedule": "rog"})
    'apgd-ce-linf eps=0.1 steps=5 schedule=rog'
    """
    name = f"{attack['attack']}-{attack['norm']} eps={attack['eps']:g}"
    if attack["attack"] in ("pgd", "apgd-ce", "apgd-dlr", "square", "fab"):
        name += f" steps={attack['steps']}"
    for key, defaults in _NAMED_OPTIONS.items():
        value = attack.get(key)
        if key == "loss" and attack["attack"] != "square":
            continue
        if value is not None and value not in defaults:
            name += f" {key}={value}"
    return name


class AttackTarget(Protocol):
    """What :func:`attack_case` reads of a target; dense and promptable targets declare it."""

    case: Any
    x: Any
    num_classes: int
    structures: dict[int, str]
    valid_range: tuple[float, float]
    #: one valid range per input channel of a multi-channel input, else empty
    channel_valid_ranges: tuple[tuple[float, float], ...]
    #: the axis of ``x`` holding image channels (None: no channel axis)
    channel_axis: int | None
    raw_per_normalized_unit: float

    def forward(self, x: Any) -> Any: ...
    def labels(self, logits: Any) -> np.ndarray: ...
    def reference_target(self) -> Any: ...
    def perturbation_raw(self, delta: Any) -> np.ndarray: ...
    def describe(self) -> dict: ...


def attack_case(
    target: AttackTarget,
    config: AttackConfig,
    *,
    clamp: bool = False,
    surface: bool = False,
    tolerance_mm: float = 2.0,
    reference: str = "auto",
    progress: Callable[[int, int], None] | None = None,
    cancel: Any = None,
) -> AttackResult:
    """Attack one case through a target (dense or promptable) and evaluate both predictions.

    Parameters
    ----------
    target : DenseTarget or PromptTarget
        The model and case (a 2D image's outputs and rows are on its 2D grid).
    config : AttackConfig
        Attack and budget (``eps`` in normalized units); its ``clamp`` is replaced by
        the target's valid range(s) when ``clamp`` is True.
    clamp : bool
        Keep perturbed inputs in the range the preprocessing can produce.
    surface : bool
        Also compute surface metrics in the rows (HD95, ASSD, NSD).
    tolerance_mm : float
        NSD tolerance.
    reference : {"auto", "labels", "prediction"}
        The attack's target: the reference labels (an error without), the clean
        prediction, or the labels when present.
    progress, cancel
        Passed to the attack (``progress(done_forward_passes, total)``).

    Returns
    -------
    AttackResult

    Raises
    ------
    AttackNotApplicable
        The attack cannot run on this model (APGD-DLR with fewer than 3 classes).
    """
    import torch

    from napari_segeval.metrics import structure_table

    if reference not in ("auto", "labels", "prediction"):
        raise ValueError(f"reference must be 'auto', 'labels' or 'prediction', got {reference!r}")
    reason = not_applicable(config, int(target.num_classes))
    if reason is not None:
        raise AttackNotApplicable(reason)
    if clamp:  # each channel in its own range when the target has several
        ranges = target.channel_valid_ranges
        config = replace(config, clamp=ranges if len(ranges) > 1 else target.valid_range)
    budget = Budget.from_normalized(config.eps, target.raw_per_normalized_unit, config.norm)
    with torch.no_grad():
        clean_logits = target.forward(target.x)
    clean_pred = target.labels(clean_logits)
    ref = None if reference == "prediction" else target.reference_target()
    if ref is None and reference == "labels":
        raise SegEvalError(
            f"{target.case.image_path or 'case'}: the attack targets the reference "
            f"labels (reference='labels') but the case has none"
        )
    reference_kind = "labels" if ref is not None else "clean prediction"
    if ref is None:
        ref = clean_logits.argmax(dim=1)
    out = run_attack(
        target.forward,
        target.x,
        ref,
        config,
        progress=progress,
        cancel=cancel,
        channel_axis=target.channel_axis,
    )
    attacked_pred = target.labels(out.logits)
    pert = target.perturbation_raw(out.delta)
    raw = np.asarray(target.case.image).astype(np.float32)
    perturbed = raw + (pert[..., None] if pert.ndim == raw.ndim - 1 else pert)

    case = target.case
    truth = case.labels if case.labels is not None else clean_pred
    rows = partial(
        structure_table, structures=target.structures, tolerance_mm=tolerance_mm, surface=surface
    )
    clean_rows, attacked_rows = (rows(truth, p, case.spacing) for p in (clean_pred, attacked_pred))
    norm_n = float(per_case_norm(out.delta.double(), config.norm)[0])
    norm_r = float(np.abs(pert).max() if config.norm == "linf" else np.linalg.norm(pert))
    params = {
        "attack": config.to_dict(),
        "target": target.describe(),
        "budget": budget.to_dict(),
        "reference": reference_kind,
        "n_forward": out.n_forward,
        "n_backward": out.n_backward,
        "model_dice": {"attacked": float(out.dice[0])},
        "info": json_safe(out.info),
    }
    return AttackResult(
        perturbed.astype(np.float32),
        pert,
        out.delta[0].cpu().numpy(),
        clean_pred,
        attacked_pred,
        clean_rows,
        attacked_rows,
        budget,
        {"norm": config.norm, "normalized": norm_n, "raw": norm_r},
        params,
        out.history,
    )
