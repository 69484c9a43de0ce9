"""Running a dense model inside a protocol, and the attack hook of ``msd-robust``.

A model is either a :class:`~napari_segeval.models.dense.DenseModel` (run by
:func:`~napari_segeval.models.dense.segment_case`) or a
:class:`~napari_segeval.models.dense.DenseBackend`:
``segment(case, *, probabilities=False) -> result`` where ``result.labels`` is
the label map on the case's grid and ``result.probabilities`` (when asked) is
``(K, *spatial)`` (this is how 2D models and test models plug in). Both declare
``name``, ``num_classes``, ``structures`` and ``raw_per_normalized_unit``, which the
protocols read as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from napari_segeval._errors import SegEvalError


def segment(model: Any, case, params: Any = None, *, probabilities: bool = False):
    """Segment ``case`` with ``model`` using the protocol's sliding-window parameters
    (``overlap``, ``mirror``, ``postprocess`` of its record; None: the defaults of
    :func:`~napari_segeval.models.dense.segment_case`)."""
    from napari_segeval.models.dense import DenseModel, segment_case

    if not isinstance(model, DenseModel):
        return model.segment(case, probabilities=probabilities)
    if params is None:
        return segment_case(model, case, probabilities=probabilities)
    return segment_case(
        model,
        case,
        overlap=params.overlap,
        mirror=bool(params.mirror),
        postprocess=bool(params.postprocess),
        probabilities=probabilities,
    )


def condition_name(attack: Mapping) -> str:
    """Condition label of a user attack: ``{"name": "m:f", "shift": 2}`` -> ``"m:f shift=2"``.

    Attacks of :mod:`napari_segeval.attacks` are named by its own
    :func:`~napari_segeval.attacks.condition_name` (``"pgd-linf eps=0.05 steps=10"``).

    Examples
    --------
    >>> condition_name({"name": "mod:blur", "sigma": 1.5})
    'mod:blur sigma=1.5'
    """
    rest = " ".join(f"{k}={v}" for k, v in sorted(attack.items()) if k != "name")
    return f"{attack['name']} {rest}".strip()


def raw_per_unit(model: Any) -> float:
    """Raw intensity units per normalized unit the model declares."""
    return float(model.raw_per_normalized_unit)


#: Keys of an attack dict that are not :class:`~napari_segeval.attacks.AttackConfig` fields.
TARGET_KEYS = ("clamp", "gradient", "reference", "batch_size")


def _split_options(attack: Mapping) -> tuple[str, dict, dict]:
    opts = {k: v for k, v in attack.items() if k != "name"}
    target = {k: opts.pop(k) for k in TARGET_KEYS if k in opts}
    return str(attack.get("name", "")), opts, target


def attack_config(attack: Mapping):
    """The :class:`~napari_segeval.attacks.AttackConfig` of an attack dict (SegEvalError if bad).

    Examples
    --------
    >>> cfg = attack_config({"name": "apgd-ce", "eps": 0.1, "steps": 5, "schedule": "rog"})
    >>> cfg.schedule, cfg.effective_step_size
    ('rog', 0.2)
    """
    from dataclasses import fields

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
    """Refuse a bad ``attacks`` list before any case runs (one line naming the attack).

    Each entry must be a dict whose built-in attack makes a valid
    :class:`~napari_segeval.attacks.AttackConfig` (see :func:`attack_config`), with a
    valid ``reference``, or whose ``module:function`` can be imported.

    Examples
    --------
    >>> check_attacks([{"name": "pgd", "eps": 0.05}, {"name": "os.path:join"}])
    >>> check_attacks([{"name": "pgd", "eps": -1}])
    Traceback (most recent call last):
    ...
    napari_segeval._errors.SegEvalError: attack {'name': 'pgd', 'eps': -1}: eps must be finite and >= 0, got -1
    """
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
    reference = str(target_opts.get("reference", "auto"))
    if reference not in ("auto", "labels", "prediction"):
        raise SegEvalError(
            f"attack {dict(attack)}: reference must be 'auto', 'labels' or "
            f"'prediction', got {reference!r}"
        )
    return reference


def skip_reason(model: Any, attack: Mapping) -> str | None:
    """Why ``attack`` cannot run on ``model`` (APGD-DLR with < 3 classes), or None.

    A protocol that lists an attack for every task (ROG's suite lists APGD-DLR)
    calls this to skip it with the reason on binary tasks instead of failing.
    User attacks (``module:function``) always run.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> skip_reason(SimpleNamespace(num_classes=2), {"name": "apgd-dlr", "eps": 0.1})[:30]
    'apgd-dlr needs at least 3 clas'
    >>> skip_reason(SimpleNamespace(num_classes=4), {"name": "apgd-dlr", "eps": 0.1}) is None
    True
    """
    if ":" in str(attack.get("name", "")):
        return None
    from napari_segeval.attacks import not_applicable

    n = model.num_classes
    return None if n is None else not_applicable(attack_config(attack), int(n))


class AttackOutcome(NamedTuple):
    """One attack on one case: condition name, attacked labels, budget, perturbed image.

    ``perturbed`` (clean image + perturbation) and ``perturbation`` are float32 in
    raw units on the case's grid; both are None for a user attack
    (``"module:function"``), which returns labels only.
    """

    condition: str
    labels: np.ndarray
    eps_raw: float
    perturbed: np.ndarray | None = None
    perturbation: np.ndarray | None = None


def run_attack(model: Any, case, attack: Mapping, params: Any) -> AttackOutcome:
    """Attack ``case``: condition, attacked labels, eps in raw units, perturbed image.

    ``attack`` is ``{"name": ..., **options}``. Names of
    :data:`napari_segeval.attacks.ATTACKS` (``fgsm``, ``pgd``, ``apgd-ce``,
    ``apgd-dlr``, ``square``, ``fab``, ``noise-gaussian``, ``noise-uniform``) run
    through :func:`napari_segeval.attacks.attack_case` on a
    :class:`~napari_segeval.attacks.DenseTarget` built with the protocol's
    sliding-window settings. Options are :class:`~napari_segeval.attacks.AttackConfig`
    fields - ``eps`` (normalized units), ``steps``, ``norm``, ``restarts``,
    ``step_size``, ``random_start``, ``seed``, ``loss``, ``schedule`` (APGD
    ``paper``/``rog``; PGD ``constant``/``cosine``/``step``; Square
    ``rescaled``/``absolute``), ``select`` (PGD ``dice``/``loss``),
    ``robust_threshold``, ``p_init`` (Square), ``target_ranks`` (FAB), ... -
    plus the target keys :data:`TARGET_KEYS`: ``clamp`` (default True: perturbed
    inputs stay in the range the preprocessing produces), ``gradient``
    (``"whole"``/``"chunked"``), ``reference`` (the attack's target: ``"labels"``
    - required -, ``"prediction"`` or ``"auto"``, the default: the labels when the
    case has them) and ``batch_size`` (windows per network call). A
    ``"module:function"`` name calls ``function(model, case, **options) -> labels``
    instead.

    Raises
    ------
    SegEvalError
        Bad options; :class:`~napari_segeval.attacks.AttackNotApplicable` when the
        attack cannot run on this model (see :func:`skip_reason`).
    """
    name, opts, target_opts = _split_options(attack)
    if ":" in name:
        from napari_segeval.evaluation.protocols._common import resolve_factory

        labels = np.asarray(resolve_factory(name)(model, case, **opts, **target_opts))
        return AttackOutcome(
            condition_name(attack), labels, float(opts.get("eps", 0.0)) * raw_per_unit(model)
        )
    from napari_segeval.attacks import DenseTarget, attack_case
    from napari_segeval.attacks import condition_name as attack_condition

    config = attack_config(attack)
    reference = _reference(attack, target_opts)
    target = DenseTarget(
        model,
        case,
        overlap=params.overlap,
        batch_size=int(target_opts.get("batch_size", 2)),
        mirror=bool(params.mirror),
        gradient=str(target_opts.get("gradient", "whole")),
        postprocess=bool(params.postprocess),
    )
    res = attack_case(
        target, config, clamp=bool(target_opts.get("clamp", True)), reference=reference
    )
    return AttackOutcome(
        attack_condition(res.params["attack"]),
        np.asarray(res.attacked_prediction),
        float(res.budget.eps_raw),
        np.asarray(res.perturbed_image, np.float32),
        np.asarray(res.perturbation, np.float32),
    )


def with_image(case: Any, image: np.ndarray) -> Any:
    """``case`` with another image on the same grid (an attacked one, a flipped one)."""
    from dataclasses import replace

    return replace(case, image=np.asarray(image))


def per_case_entropy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """Mean normalized predictive entropy over the predicted foreground (all voxels if none).

    Examples
    --------
    >>> p = np.stack([np.full((2, 2), 0.5), np.full((2, 2), 0.5)])
    >>> per_case_entropy(p, np.ones((2, 2), int))
    1.0
    """
    p = np.clip(np.asarray(probabilities, np.float64), 1e-12, 1.0)
    k = p.shape[0]
    h = -(p * np.log(p)).sum(axis=0) / np.log(max(k, 2))
    fg = np.asarray(labels) > 0
    return float(h[fg].mean() if fg.any() else h.mean())


__all__ = [
    "TARGET_KEYS",
    "AttackOutcome",
    "attack_config",
    "check_attacks",
    "condition_name",
    "per_case_entropy",
    "raw_per_unit",
    "run_attack",
    "segment",
    "skip_reason",
    "with_image",
]
