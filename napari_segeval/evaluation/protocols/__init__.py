"""Named, versioned evaluation recipes.

A :class:`Protocol` bundles a name, a version, default parameters, a per-case
function and an aggregation. Its functions are module-level, so the object
pickles by reference and runs in spawned worker processes and on Dask workers.

A protocol that runs one model of a kind (``model_kind``: ``"promptable"`` or
``"dense"``) takes **several models** in one run: the parameter ``models`` (a
list of model references, ``segeval evaluate --model A --model B``). Every model
is scored on the same case, prompts and attacks (:func:`run_models`); each row
carries its ``model``, and the saved predictions and thumbnails of a model are
keyed :func:`prediction_key` (``"clean @ threshold"``, a
:class:`~napari_segeval.evaluation.keys.PredictionKey`).

Whether a protocol's runs have correction rounds (rows with ``round``, predictions
keyed ``round<k>:``) is its :attr:`Protocol.has_rounds`; generic code asks it, for a
results folder through :func:`run_has_rounds`, and never guesses from the rows.

Registered protocols (see :data:`REGISTRY`): ``msd-robust``, ``medsam2-3d``,
``medsam2-video``, ``uncertainty``, ``cv5-2d``, ``interactive``. :func:`get_protocol` also accepts
``"package.module:ATTRIBUTE"`` naming any :class:`Protocol` object.

A protocol may carry **paper presets** (:class:`Preset`): named parameter sets
that follow a published recipe to the letter (except its documented recipe
bugs, which stay corrected). ``segeval evaluate --preset NAME`` applies one;
the preset's name is recorded in ``run.json``, ``summary.json`` and the report,
next to its list of differences from the paper (the same list, word for word,
as ``docs/protocols.md``; a test keeps the two equal).
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
        Parameter values the preset sets (every key must be a field of the protocol's
        :attr:`Protocol.params` record);
        user ``--param`` overrides still apply on top and are recorded.
    source : str
        The paper and code the preset follows, one line.
    differences : tuple of str
        Every deliberate difference between the preset and that recipe, one
        sentence each with its reason (shown in the report, listed word for word
        in ``docs/protocols.md``).
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
        The source image's geometry (every array is written with it).
    axes : str
        The source image's axes (``"zyx"``, ``"tyx"``, ``"yx"``, ``"yxc"`` ...).
    source : str
        The source image's path: its kind picks the file format
        (:func:`napari_segeval.io._formats.output_formats`).
    arrays : dict of str to numpy.ndarray
        Keyed as the record's ``files``: a condition name (``"clean"``,
        ``"fgsm-linf eps=0.5"``) holds that condition's label map;
        ``"perturbed:<condition>"`` and ``"perturbation:<condition>"`` hold the
        attacked image and the perturbation in raw units (float32).
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
        One per structure x condition, with at least ``structure``, ``condition``
        and the metric columns (``dice`` ...). The runner adds ``case``,
        ``protocol``, ``protocol_version``, ``fold``, ``split`` and ``status``.
    views : dict of str to numpy.ndarray
        2D arrays for report thumbnails: ``"image"`` (uint8 grey or RGB),
        ``"reference"`` and one label slice per condition (``"clean"`` ...).
    extra : dict
        Per-case values that are not per-structure (an uncertainty score ...),
        kept in the case record and copied into its rows.
    arrays : CaseArrays or None
        Predictions (and perturbed images) to save as files in the results folder
        (see :mod:`napari_segeval.evaluation.files`); None saves nothing.
    slices : list of dict
        Per-slice risk rows (``slices.csv``: :data:`~napari_segeval.evaluation.rows.SLICES`;
        the runner adds ``case``).
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
        The protocol's parameter record (a frozen dataclass deriving from
        :class:`~napari_segeval.evaluation.protocols._params.Params`): every parameter
        with its default, its choices and rules (:meth:`~._params.Params.check`);
        unknown parameters are refused. A protocol of ``model_kind`` has ``model`` and
        ``models`` (:class:`~._params.Models`).
    run_case : callable
        ``run_case(spec: CaseSpec, params) -> CaseOutput`` (``params``: a checked
        record); raises on bad input (the runner turns the exception into an error row).
    summarize : callable
        ``summarize(rows: list[dict], params) -> dict`` over ok rows.
    description : str
        One paragraph for ``--help`` and the report.
    select : callable, optional
        ``select(specs, params) -> specs`` picking the cases to evaluate (default:
        every case with reference labels, plus cases that carry a parse error).
    needs_folds : bool
        Assign cross-validation folds before running.
    layout_options : mapping
        Default options for :func:`~napari_segeval.evaluation.layouts.load_layout`
        (``{"camus_mode": "sequences"}`` for video protocols).
    prepare : callable, optional
        ``prepare(specs, params, output_dir) -> None``, run once in the calling
        process after folds are assigned and before any case is dispatched (train
        per-fold models ...). It may add JSON values to ``spec.meta``; the specs
        are saved in ``cases.json`` afterwards and reach ``run_case``.
    presets : mapping of str to Preset
        Paper presets by name (see :class:`Preset`).
    model_kind : {"promptable", "dense"} or None
        The kind of the protocol's ``model`` parameter. When set, the protocol also
        takes ``models`` (a list of references of that kind, evaluated one after
        the other on each case: :func:`run_models`); None: one model or none.
    run_models : callable, optional
        ``run_models(spec, params, models) -> dict of model -> CaseOutput`` when the
        models can share work (read the case and compute its prompts once); by
        default each model runs ``run_case`` with ``params.model`` set to it.
    differences : tuple of str
        Every deliberate difference between the *defaults* and the published
        recipe the protocol is named after, with its reason.
    has_rounds : bool
        The protocol scores correction rounds (``interactive``): its rows carry
        ``round`` and its predictions of round ``k`` are keyed ``round<k>:``
        (:class:`~napari_segeval.evaluation.keys.PredictionKey`). The report, the
        summary and the results browser ask this instead of looking at the rows.
    report_section : callable, optional
        ``report_section(results) -> str``: the protocol's own section of
        ``report.html`` (HTML, from ``summary.json``'s ``results``), placed after
        the Dice tables; the report asks the protocol for it, never its name.
    rows : RowSchema or None
        The columns of its rows (:mod:`napari_segeval.evaluation.rows`): the runner
        refuses a row with a column the schema does not declare. None (a protocol
        of ``module:attr`` that declares none): not checked.

    Examples
    --------
    >>> p = get_protocol("medsam2-3d")
    >>> p.name, p.resolve_params({"jitter": 2}).jitter
    ('medsam2-3d', 2)
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
        """The protocol's parameter record: defaults, then the preset's values, then
        ``overrides`` (a mapping, or a record of an earlier resolution), checked.

        Unknown parameter or preset names raise :class:`SegEvalError`; so do
        ``models`` (or one ``model``) that :func:`check_models` refuses, ``model`` given beside
        ``models``, and values the record's :meth:`~._params.Params.check` refuses (so a
        bad value is refused before a results folder is written or any case runs;
        ``select`` and ``prepare`` take checked parameters). ``models`` of one name is
        the run of that ``model``; of several, ``model`` is None (each model's rows
        carry their own).
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
    """The name of a condition's prediction (or of its ``perturbed:`` image) in a run.

    One model per run: the key itself (``"clean"``); several: the key with its
    model (``"clean @ threshold"``), in the record's ``files``, the thumbnails
    (``"pred:<key>"``) and the results browser. The text is
    :meth:`PredictionKey.format <napari_segeval.evaluation.keys.PredictionKey.format>`'s.

    Examples
    --------
    >>> prediction_key("clean"), prediction_key("perturbed:fgsm-linf eps=0.5", "builtin")
    ('clean', 'perturbed:fgsm-linf eps=0.5 @ builtin')
    """
    return str(PredictionKey.parse(key).with_model(model))


def run_has_rounds(run: Mapping, rows: Sequence[Mapping] = ()) -> bool:
    """Whether the run of ``run.json`` (``run``) has correction rounds: its protocol's
    :attr:`Protocol.has_rounds`.

    A folder whose protocol this installation cannot load (a ``module:ATTR`` protocol
    no longer importable) is read as it was written: it has rounds when its ``rows``
    carry ``round``. That is decided here, once, at the edge.

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
    """The ``models`` parameter checked: a list of distinct references of the protocol's kind.

    Raises :class:`SegEvalError` (one line) for a protocol that takes one model,
    a repeated model, an unknown name (with the closest known names) or a model
    of the other kind. An empty list is None (the ``model`` parameter runs).

    Examples
    --------
    >>> check_models(get_protocol("medsam2-3d"), ["builtin", "threshold"])
    ['builtin', 'threshold']
    >>> check_models(get_protocol("medsam2-3d"), ["builtin", "builtin"])
    Traceback (most recent call last):
    ...
    napari_segeval._errors.SegEvalError: model 'builtin' is given twice: each model runs once
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
    """Each model's ``(params, CaseOutput)`` on one case: ``params`` with ``model`` set to it.

    Through the protocol's own ``run_models`` when it has one (shared prompts),
    else ``run_case`` once per model. Every row gets ``model`` = the reference.
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
    """One case's output of several models: rows in model order, keys :func:`prediction_key`.

    The image and reference thumbnails are the first model's (the same case);
    ``extra`` holds each model's per-case values under its name.
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
    """Look up a protocol by registered name or ``"module:ATTRIBUTE"``.

    Examples
    --------
    >>> get_protocol("cv5-2d").needs_folds
    True
    """
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
