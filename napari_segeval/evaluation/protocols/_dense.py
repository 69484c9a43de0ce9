"""Running a dense model inside a protocol, and the attack hook of ``msd-robust``: a
:class:`~napari_segeval.models.dense.DenseModel` or a backend with ``segment(case, *,
probabilities=False)`` (how 2D and test models plug in)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, NamedTuple

import numpy as np

from napari_segeval._errors import SegEvalError


def segment(model: Any, case, params: Any = None, *, probabilities: bool = False):
    """``model``'s result on ``case`` with the record's :func:`window_options`."""
    from napari_segeval.models.dense import DenseModel, segment_case

    if not isinstance(model, DenseModel):
        return model.segment(case, probabilities=probabilities)
    window = {} if params is None else window_options(params)
    return segment_case(model, case, probabilities=probabilities, **window)


def window_options(params: Any) -> dict:
    """The record's ``overlap``, ``mirror`` and ``postprocess``."""
    mirror, postprocess = bool(params.mirror), bool(params.postprocess)
    return {"overlap": params.overlap, "mirror": mirror, "postprocess": postprocess}


def condition_name(attack: Mapping) -> str:
    """Condition label of a user attack: ``{"name": "m:f", "shift": 2}`` -> ``"m:f shift=2"``."""
    rest = " ".join(f"{k}={v}" for k, v in sorted(attack.items()) if k != "name")
    return f"{attack['name']} {rest}".strip()


#: Keys of an attack dict that are not :class:`~napari_segeval.attacks.AttackConfig` fields.
TARGET_KEYS = ("clamp", "gradient", "reference", "batch_size")


def _split_options(attack: Mapping) -> tuple[str, dict, dict]:
    """``(name, AttackConfig options, target options)``."""
    opts = {k: v for k, v in attack.items() if k != "name"}
    target = {k: opts.pop(k) for k in TARGET_KEYS if k in opts}
    return str(attack.get("name", "")), opts, target


def attack_config(attack: Mapping):
    """The :class:`~napari_segeval.attacks.AttackConfig` of an attack dict (refused in one line)."""
    from napari_segeval.attacks import AttackConfig

    name, opts, _ = _split_options(attack)
    known = {f.name for f in fields(AttackConfig)} - {"attack"}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise SegEvalError(
            f"attack {dict(attack)}: unknown option {unknown[0]!r} (options: "
            f"{', '.join(sorted(known | set(TARGET_KEYS)))})"
        )
    try:
        return AttackConfig(attack=name, **opts)
    except (TypeError, ValueError) as exc:
        raise SegEvalError(f"attack {dict(attack)}: {exc}") from exc


def check_attacks(attacks: Any) -> None:
    """Refuse a bad ``attacks`` list before any case runs (one line naming the attack)."""
    if not isinstance(attacks, (list, tuple)):
        raise SegEvalError(
            f"parameter attacks must be a list of attacks such as "
            f'{{"name": "pgd", "eps": 0.05}}, got {attacks!r}'
        )
    for attack in attacks:
        if not isinstance(attack, Mapping):
            raise SegEvalError(
                f'attack {attack!r}: expected an object such as {{"name": "pgd", "eps": 0.05}}'
            )
        name, _, target_opts = _split_options(attack)
        if ":" in name:
            from napari_segeval.evaluation.protocols._common import resolve_factory

            resolve_factory(name)
            continue
        attack_config(attack)
        _reference(attack, target_opts)


def _reference(attack: Mapping, target_opts: Mapping) -> str:
    """The attack's ``reference`` option, checked."""
    reference = str(target_opts.get("reference", "auto"))
    if reference not in ("auto", "labels", "prediction"):
        raise SegEvalError(
            f"attack {dict(attack)}: reference must be 'auto', 'labels' or "
            f"'prediction', got {reference!r}"
        )
    return reference


class AttackOutcome(NamedTuple):
    """One attack on one case; the images are float32 in raw units (None for a user attack)."""

    condition: str
    labels: np.ndarray
    perturbed: np.ndarray | None = None
    perturbation: np.ndarray | None = None


def run_attack(model: Any, case, attack: Mapping, params: Any) -> AttackOutcome:
    """Attack ``case`` (``{"name": ..., **options}``) with the record's sliding window.

    A name of :data:`napari_segeval.attacks.ATTACKS` runs
    :func:`~napari_segeval.attacks.attack_case` on a ``DenseTarget``; its options are
    ``AttackConfig`` fields (``eps`` in normalized units ...) plus :data:`TARGET_KEYS`:
    ``clamp`` (default True), ``gradient`` (``whole``/``chunked``), ``reference``
    (``labels``, ``prediction`` or ``auto``: the labels when the case has them) and
    ``batch_size``. A ``"module:function"`` name calls ``function(model, case, **options) ->
    labels``. Raises SegEvalError for bad options, ``AttackNotApplicable`` when it cannot run.
    """
    name, opts, target_opts = _split_options(attack)
    if ":" in name:
        from napari_segeval.evaluation.protocols._common import resolve_factory

        labels = np.asarray(resolve_factory(name)(model, case, **opts, **target_opts))
        return AttackOutcome(condition_name(attack), labels)
    from napari_segeval.attacks import DenseTarget, attack_case
    from napari_segeval.attacks import condition_name as attack_condition

    config = attack_config(attack)
    reference = _reference(attack, target_opts)
    batch = int(target_opts.get("batch_size", 2))
    gradient = str(target_opts.get("gradient", "whole"))
    target = DenseTarget(model, case, batch_size=batch, gradient=gradient, **window_options(params))
    res = attack_case(
        target, config, clamp=bool(target_opts.get("clamp", True)), reference=reference
    )
    return AttackOutcome(
        attack_condition(res.params["attack"]),
        np.asarray(res.attacked_prediction),
        np.asarray(res.perturbed_image, np.float32),
        np.asarray(res.perturbation, np.float32),
    )


def attack_images(condition: str, perturbed: Any, perturbation: Any) -> dict:
    """The perturbed image and perturbation, keyed as a record's files."""
    from napari_segeval.evaluation.keys import IMAGE_KINDS, PredictionKey

    pair = (perturbed, perturbation)
    return {
        str(PredictionKey(condition, kind=k)): v for k, v in zip(IMAGE_KINDS, pair, strict=True)
    }


def dense_risks(labels, probabilities, structures: Mapping, params: Any, **kw) -> tuple[dict, list]:
    """Each label's risk and the ``slices.csv`` rows (``evaluation.triage.dense_risk_rows``)."""
    from napari_segeval.evaluation.triage import dense_risk_rows

    risks, rows = dense_risk_rows(labels, probabilities, structures, model=str(params.model), **kw)
    return {label: r.risk for label, r in risks.items()}, rows


def per_case_entropy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """Mean normalized predictive entropy over the predicted foreground (all voxels if none)."""
    p = np.clip(np.asarray(probabilities, np.float64), 1e-12, 1.0)
    k = p.shape[0]
    h = -(p * np.log(p)).sum(axis=0) / np.log(max(k, 2))
    fg = np.asarray(labels) > 0
    return float(h[fg].mean() if fg.any() else h.mean())
