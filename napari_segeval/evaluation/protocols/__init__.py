"""Named, versioned evaluation recipes (:class:`Protocol`), their presets and registry.

A protocol's functions are module-level, so it pickles by reference (spawned workers,
Dask). One of ``model_kind`` runs several models per case (:func:`run_models`), their
predictions keyed :func:`prediction_key`. ``docs/protocols.md`` describes each protocol.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from napari_segeval._errors import SegEvalError
from napari_segeval.evaluation.keys import PredictionKey
from napari_segeval.evaluation.protocols._params import Models, Params
from napari_segeval.evaluation.rows import RowSchema

#: Prefix of a prediction's thumbnail in a case's views (``"pred:<prediction key>"``).
PRED = "pred:"

#: Protocol name -> module defining ``PROTOCOL``.
REGISTRY: dict[str, str] = {
    "msd-robust": "napari_segeval.evaluation.protocols.msd_robust",
    "medsam2-3d": "napari_segeval.evaluation.protocols.medsam2_3d",
    "medsam2-video": "napari_segeval.evaluation.protocols.medsam2_video",
    "uncertainty": "napari_segeval.evaluation.protocols.uncertainty",
    "cv5-2d": "napari_segeval.evaluation.protocols.cv5_2d",
    "interactive": "napari_segeval.evaluation.protocols.interactive",
}


@dataclass(frozen=True)
class Preset:
    """A named parameter set following one published recipe.

    Parameters
    ----------
    name : str
        What users type after ``--preset`` (``"rog"``, ``"medsam2"`` ...).
    params : mapping
        Values the preset sets (fields of the protocol's params record); ``--param``
        overrides still apply on top.
    source : str
        The paper and code the preset follows, one line.
    differences : tuple of str
        Every deliberate difference from that recipe, with its reason (shown in the report,
        listed in ``docs/protocols.md``).
    """

    name: str
    params: Mapping[str, Any]
    source: str
    differences: tuple[str, ...] = ()


@dataclass
class CaseArrays:
    """Arrays of one case to save in the results folder, on the source image's grid.

    Parameters
    ----------
    geometry : Geometry
        The source image's geometry.
    axes : str
        The source image's axes (``"zyx"``, ``"yxc"`` ...).
    source : str
        The source image's path (its kind picks the file format).
    arrays : dict of str to numpy.ndarray
        Keyed as the record's ``files``: a condition's label map, ``"perturbed:<condition>"``
        and ``"perturbation:<condition>"`` (float32, raw units).
    """

    geometry: Any
    axes: str
    source: str
    arrays: dict = field(default_factory=dict)


@dataclass
class CaseOutput:
    """What a protocol returns for one case.

    Parameters
    ----------
    rows : list of dict
        One per structure x condition: ``structure``, ``condition`` and the metric columns
        (the runner adds ``case``, ``protocol``, ``fold`` ...).
    views : dict of str to numpy.ndarray
        2D report thumbnails: ``"image"``, ``"reference"``, ``"pred:<condition>"``.
    extra : dict
        Per-case values that are not per-structure, copied into its rows.
    arrays : CaseArrays or None
        Predictions (and perturbed images) to save; None saves nothing.
    slices : list of dict
        Per-slice risk rows (``slices.csv``; the runner adds ``case``).
    """

    rows: list[dict]
    views: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    arrays: CaseArrays | None = None
    slices: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Protocol:
    """A named, versioned evaluation recipe.

    Parameters
    ----------
    name, version : str
        Written into every result row and ``summary.json``.
    params : type
        The frozen :class:`~._params.Params` record of its parameters.
    run_case : callable
        ``run_case(spec, params) -> CaseOutput``; raises on bad input (an error row).
    summarize : callable
        ``summarize(rows, params) -> dict`` over ok rows.
    description : str
        One paragraph for ``--help`` and the report.
    select : callable, optional
        ``select(specs, params) -> specs`` (default: cases with labels or a parse error).
    needs_folds : bool
        Assign cross-validation folds before running.
    layout_options : mapping
        Default options for :func:`~napari_segeval.evaluation.layouts.load_layout`.
    prepare : callable, optional
        ``prepare(specs, params, output_dir)``, run once after folds are assigned (train
        per-fold models ...); may add JSON values to ``spec.meta``.
    presets : mapping of str to Preset
        Paper presets by name.
    differences : tuple of str
        Every deliberate difference of the defaults from the published recipe.
    model_kind : {"promptable", "dense"} or None
        The kind of its ``model``; when set it also takes ``models`` (:func:`run_models`).
    run_models : callable, optional
        ``run_models(spec, params, models) -> dict of model -> CaseOutput`` sharing work
        between models (default: ``run_case`` per model).
    has_rounds : bool
        Its rows carry ``round`` and round ``k``'s predictions are keyed ``round<k>:``.
    report_section : callable, optional
        ``report_section(results) -> str``: its own HTML section of ``report.html``.
    rows : RowSchema or None
        The columns of its rows (the runner refuses others); None: not checked.
    """

    name: str
    version: str
    params: type[Params]
    run_case: Callable
    summarize: Callable
    description: str = ""
    select: Callable | None = None
    needs_folds: bool = False
    layout_options: Mapping[str, Any] = field(default_factory=dict)
    prepare: Callable | None = None
    presets: Mapping[str, Preset] = field(default_factory=dict)
    differences: tuple[str, ...] = ()
    model_kind: str | None = None
    run_models: Callable | None = None
    has_rounds: bool = False
    report_section: Callable | None = None
    rows: RowSchema | None = None

    def preset(self, name: str | None) -> Preset | None:
        """The preset called ``name`` (None for None); unknown names raise :class:`SegEvalError`."""
        if name is None:
            return None
        if name not in self.presets:
            known = ", ".join(sorted(self.presets)) or "none"
            raise SegEvalError(f"protocol {self.name} has no preset {name!r} (presets: {known})")
        return self.presets[name]

    def resolve_params(
        self, overrides: Mapping[str, Any] | Params | None = None, preset: str | None = None
    ) -> Any:
        """The checked parameter record: defaults, then the preset's values, then ``overrides``.

        Raises :class:`SegEvalError` for unknown names, ``models`` :func:`check_models` refuses,
        ``model`` beside ``models`` and values the record's ``check`` refuses. ``models`` of one
        name is that ``model``'s run; of several, ``model`` is None.
        """
        over = overrides.to_json() if isinstance(overrides, Params) else dict(overrides or {})
        if over.get("models") and over.get("model") is not None:
            raise SegEvalError(
                f"protocol {self.name}: model={over['model']!r} and models="
                f"{over['models']!r} both given: name every model in models"
            )
        params = self.params()
        chosen = self.preset(preset)
        layers = [(f"preset {chosen.name}", chosen.params)] if chosen else []
        for origin, values in [*layers, ("", over)]:
            if "models" in values and self.model_kind is None:
                check_models(self, values["models"])  # one line: this protocol takes one model
            params = params.updated(values, self.name, origin)
        if isinstance(params, Models) and params.models is not None:
            models = check_models(self, params.models)
            if models and len(models) == 1:  # one model: the plain one-model run
                params = replace(params, model=models[0], models=None)
            else:  # several: each model's rows carry their own
                params = replace(params, model=None if models else params.model, models=models)
        elif isinstance(params, Models) and isinstance(params.model, str):
            from napari_segeval.models import registry

            _check_kind(self, params.model, registry)
        params.check()
        return params

    def differences_for(self, preset: str | None) -> tuple[str, ...]:
        """The documented differences from the paper of ``preset`` (or of the defaults)."""
        chosen = self.preset(preset)
        return chosen.differences if chosen else self.differences

    def cases(self, specs: Sequence, params: Params) -> list:
        """The cases this protocol evaluates."""
        if self.select is not None:
            return list(self.select(specs, params))
        return [s for s in specs if s.labels or s.error]


def prediction_key(key: str | PredictionKey, model: str | None = None) -> str:
    """The name of a condition's prediction (or ``perturbed:`` image) in a run: the key itself
    with one model, else with its model (``"clean @ threshold"``).

    Examples
    --------
    >>> prediction_key("clean"), prediction_key("perturbed:fgsm-linf eps=0.5", "builtin")
    ('clean', 'perturbed:fgsm-linf eps=0.5 @ builtin')
    """
    return str(PredictionKey.parse(key).with_model(model))


def run_has_rounds(run: Mapping, rows: Sequence[Mapping] = ()) -> bool:
    """Whether the run of ``run.json`` has correction rounds (its protocol's ``has_rounds``).

    A protocol that no longer loads is read as written: rounds when its ``rows`` carry ``round``.

    Examples
    --------
    >>> run_has_rounds({"protocol": "interactive"}), run_has_rounds({"protocol": "msd-robust"})
    (True, False)
    >>> run_has_rounds({"protocol": "gone:PROTOCOL"}, [{"round": 0}])
    True
    """
    try:
        return get_protocol(str(run.get("protocol"))).has_rounds
    except SegEvalError:
        return any(r.get("round") not in (None, "") for r in rows)


def check_models(protocol: Protocol, models: Any) -> list[str] | None:
    """The ``models`` parameter checked: distinct references of the protocol's kind (``[]``: None).

    Raises :class:`SegEvalError` (one line) for a one-model protocol, a repeated or unknown
    model, or a model of the other kind.
    """
    from napari_segeval.models import registry

    if protocol.model_kind is None:
        raise SegEvalError(
            f"protocol {protocol.name} evaluates one model; several models run "
            "with medsam2-3d, medsam2-video, msd-robust or interactive"
        )
    if isinstance(models, str):
        models = [models]
    if not isinstance(models, (list, tuple)) or not all(isinstance(m, str) and m for m in models):
        raise SegEvalError(f"parameter models must be a list of model names, got {models!r}")
    seen: list[str] = []
    for ref in models:
        if ref in seen:
            raise SegEvalError(f"model {ref!r} is given twice: each model runs once")
        _check_kind(protocol, ref, registry)
        seen.append(ref)
    return seen or None


def _check_kind(protocol: Protocol, ref: str, registry: Any) -> None:
    """Refuse a reference that cannot be a model of the protocol's kind (one line)."""
    kind = protocol.model_kind
    if kind == "promptable":
        if registry.is_reference(ref, "promptable"):
            return
        if ref in registry.model_names("dense"):
            raise SegEvalError(
                f"model {ref!r} is a dense model; protocol {protocol.name} "
                "prompts promptable models ("
                f"{', '.join(registry.model_names('promptable'))})"
            )
        raise registry.unknown_promptable(ref)
    if registry.is_promptable(ref):
        raise SegEvalError(
            f"model {ref!r} is a promptable model; protocol {protocol.name} "
            f"runs dense models ({', '.join(registry.model_names('dense'))}, "
            "a weights file or folder)"
        )


def run_models(
    protocol: Protocol, spec: Any, params: Any, models: Sequence[str]
) -> dict[str, tuple[Any, CaseOutput]]:
    """Each model's ``(params, CaseOutput)`` on one case, ``params.model`` set to it; every row
    gets ``model``. Uses the protocol's ``run_models`` when it has one.
    """
    each = {m: replace(params, model=m, models=None) for m in models}
    if protocol.run_models is not None:
        outs = protocol.run_models(spec, params, list(models))
    else:
        outs = {m: protocol.run_case(spec, each[m]) for m in models}
    for m, out in outs.items():
        for r in out.rows:
            r["model"] = m
    return {m: (each[m], outs[m]) for m in models}


def merge_outputs(outputs: Mapping[str, CaseOutput]) -> CaseOutput:
    """One case's output of several models: rows in model order, keys :func:`prediction_key`,
    the first model's image and reference thumbnails, ``extra`` by model.
    """
    rows: list[dict] = []
    views: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    arrays: CaseArrays | None = None
    slices: list[dict] = []
    for m, out in outputs.items():
        rows += out.rows
        slices += out.slices
        for k, v in out.views.items():
            key = f"{PRED}{prediction_key(k[len(PRED) :], m)}" if k.startswith(PRED) else k
            views.setdefault(key, v)
        if out.extra:
            extra[m] = out.extra
        if out.arrays is not None:
            if arrays is None:
                arrays = CaseArrays(out.arrays.geometry, out.arrays.axes, out.arrays.source)
            arrays.arrays.update({prediction_key(k, m): v for k, v in out.arrays.arrays.items()})
    return CaseOutput(rows, views, {"by_model": extra} if extra else {}, arrays, slices)


def get_protocol(name: str | Protocol) -> Protocol:
    """Look up a protocol by registered name or ``"module:ATTRIBUTE"``."""
    if isinstance(name, Protocol):
        return name
    if name in REGISTRY:
        module, attr = REGISTRY[name], "PROTOCOL"
    elif ":" in name:
        module, attr = name.split(":", 1)
    else:
        raise SegEvalError(f"unknown protocol {name!r}; choose one of {', '.join(REGISTRY)}")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise SegEvalError(f"cannot load protocol {name!r}: {exc}") from exc
    if not isinstance(obj, Protocol):
        raise SegEvalError(f"{name!r} is not a Protocol")
    return obj


__all__ = [
    "PRED",
    "REGISTRY",
    "CaseArrays",
    "CaseOutput",
    "Params",
    "Preset",
    "Protocol",
    "check_models",
    "get_protocol",
    "merge_outputs",
    "prediction_key",
    "run_has_rounds",
    "run_models",
]
